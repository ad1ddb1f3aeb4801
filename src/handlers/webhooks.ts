import type { operations } from '../../generated/openapi/webhooks.js';
import type { Config } from '../config.js';
import type { RestHandlers } from '../http/rest-api.js';
import type { WebhookService } from '../services/webhooks/webhook-service.js';
import { servingOriginOf } from '../http/serving-origin.js';
import { StreamedJson } from '../http/streamed-json.js';

/** The settings the webhook pages and operations read: WEBHOOK_PUBLIC_URL, and the listener's for the origin it falls back to. */
export type WebhookUrlSettings = Pick<Config, 'webhookPublicUrl' | 'tlsCert' | 'port'>;

/** The operations the contract engine serves; capture, the page and the event stream are served by the module itself. */
type JsonOperation =
  | 'createRoute'
  | 'inspectRoute'
  | 'exportRouteHar'
  | 'deleteRoute'
  | 'getCapturedRequest'
  | 'getCapturedRequestBody'
  | 'getCapturedRequestHar'
  | 'getCapturedRequestCurl'
  | 'deleteCapturedRequest';

/**
 * Types `/raw` may show inline with `?inline=1`: ones a browser only displays (raster images, plain
 * text, JSON). Everything else (HTML, SVG, XML, XHTML, PDF, unknown) is always an attachment, so a
 * captured document can never render on this origin (docs/webhooks.md).
 */
const INLINE_SAFE_TYPE = /^(image\/(png|jpeg|gif|webp|avif|bmp)|text\/plain|application\/json)\s*(;|$)/i;

/** Captured bytes are attacker-chosen: never let them run as a page of this origin. */
const RAW_GUARD_HEADERS = { 'content-security-policy': "default-src 'none'; sandbox", 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' };

/** Handlers of the JSON operations of `contracts/openapi/webhooks.yaml`, keyed by operationId. */
export function webhookApiHandlers(webhooks: WebhookService, config: WebhookUrlSettings): RestHandlers<Pick<operations, JsonOperation>> {
  return {
    createRoute: async (call) => ({
      status: 201,
      body: await webhooks.createRoute(call.body, servingOriginOf(config, call.headers, call.client, config.webhookPublicUrl), call.remoteAddress),
    }),
    inspectRoute: async (call) => ({
      status: 200,
      body: StreamedJson.of(
        await webhooks.inspect(
          call.params.routeId,
          { limit: call.query.limit ?? 50, before: call.query.before, q: call.query.q, method: call.query.method },
          call.remoteAddress,
        ),
      ),
      headers: { 'cache-control': 'no-store' },
    }),
    exportRouteHar: async (call) => {
      const query = { limit: call.query.limit ?? 50, before: call.query.before, q: call.query.q, method: call.query.method };
      const { har, next } = await webhooks.exportHar(
        call.params.routeId,
        query,
        servingOriginOf(config, call.headers, call.client, config.webhookPublicUrl),
        call.remoteAddress,
      );
      const headers: Record<string, string> = { 'cache-control': 'no-store', 'content-disposition': `attachment; filename="${call.params.routeId}.har"` };
      if (next !== null) {
        const params = new URLSearchParams({ limit: String(query.limit), before: next });
        if (query.q !== undefined) params.set('q', query.q);
        if (query.method !== undefined) params.set('method', query.method);
        headers.link = `</inspect/${call.params.routeId}/export.har?${params}>; rel="next"`;
      }
      return { status: 200, body: StreamedJson.of(har), headers };
    },
    deleteRoute: async (call) => {
      await webhooks.deleteRoute(call.params.routeId);
      return { status: 204 };
    },
    getCapturedRequest: async (call) => ({
      status: 200,
      body: await webhooks.describeCapture(call.params.routeId, call.params.requestId),
      headers: { 'cache-control': 'no-store' },
    }),
    getCapturedRequestBody: async (call) => {
      const capture = await webhooks.getCapture(call.params.routeId, call.params.requestId);
      const contentType = capture.contentType ?? 'application/octet-stream';
      const inline = call.query.inline === 1 && INLINE_SAFE_TYPE.test(contentType);
      return {
        status: 200,
        body: capture.body,
        contentType,
        headers: { ...RAW_GUARD_HEADERS, 'content-disposition': inline ? 'inline' : `attachment; filename="${capture.id}"` },
      };
    },
    getCapturedRequestHar: async (call) => ({
      status: 200,
      body: await webhooks.captureHar(call.params.routeId, call.params.requestId, servingOriginOf(config, call.headers, call.client, config.webhookPublicUrl)),
      headers: { 'cache-control': 'no-store', 'content-disposition': `attachment; filename="${call.params.requestId.toLowerCase()}.har"` },
    }),
    getCapturedRequestCurl: async (call) => ({
      status: 200,
      body: Buffer.from(
        await webhooks.captureCurl(
          call.params.routeId,
          call.params.requestId,
          servingOriginOf(config, call.headers, call.client, config.webhookPublicUrl),
          call.query.url,
        ),
      ),
      contentType: 'text/plain; charset=utf-8',
      headers: { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' },
    }),
    deleteCapturedRequest: async (call) => {
      await webhooks.deleteCapture(call.params.routeId, call.params.requestId);
      return { status: 204 };
    },
  };
}
