import type { operations } from '../../generated/openapi/webhooks.js';
import type { Config } from '../config.js';
import type { NodeRequest, RestHandlers } from '../http/rest-api.js';
import type { WebhookService } from '../services/webhooks/webhook-service.js';

/** Where clients reach this server: WEBHOOK_PUBLIC_URL, else the request's own scheme and Host. */
export function baseUrlOf(config: Config, headers: NodeRequest['headers']): string {
  if (config.webhookPublicUrl) return config.webhookPublicUrl;
  const forwarded = String(headers['x-forwarded-proto'] ?? '')
    .split(',')[0]
    ?.trim();
  const scheme = forwarded === 'https' || forwarded === 'http' ? forwarded : config.tlsCert ? 'https' : 'http';
  const host = String(headers.host ?? headers[':authority'] ?? '');
  return `${scheme}://${/^[A-Za-z0-9.\-:[\]]+$/.test(host) ? host : `localhost:${config.port}`}`;
}

/** The operations the contract engine serves; capture, the page and the event stream are served by the module itself. */
type JsonOperation = 'createRoute' | 'inspectRoute' | 'deleteRoute' | 'getCapturedRequest' | 'getCapturedRequestBody' | 'deleteCapturedRequest';

/** Handlers of the JSON operations of `contracts/openapi/webhooks.yaml`, keyed by operationId. */
export function webhookApiHandlers(webhooks: WebhookService, config: Config): RestHandlers<Pick<operations, JsonOperation>> {
  return {
    createRoute: async (call) => ({
      status: 201,
      body: await webhooks.createRoute(call.body, baseUrlOf(config, call.headers), call.remoteAddress),
    }),
    inspectRoute: async (call) => ({
      status: 200,
      body: await webhooks.inspect(call.params.routeId, call.query.limit ?? 50, call.query.before),
      headers: { 'cache-control': 'no-store' },
    }),
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
      return {
        status: 200,
        body: capture.body,
        contentType: capture.contentType ?? 'application/octet-stream',
        // Captured bytes are attacker-chosen: never let them run as a page of this origin.
        headers: { 'content-security-policy': "default-src 'none'; sandbox", 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' },
      };
    },
    deleteCapturedRequest: async (call) => {
      await webhooks.deleteCapture(call.params.routeId, call.params.requestId);
      return { status: 204 };
    },
  };
}
