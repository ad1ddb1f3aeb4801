import type { operations } from '../../generated/openapi/webhooks.js';
import type { Config } from '../config.js';
import type { NodeRequest, RestCall, RestReply } from '../http/rest-api.js';
import type { WebhookService } from '../services/webhook-service.js';
import type { JsonRequestBody } from './types.js';

type Call<Op extends keyof operations, Params = Record<string, string>, Query = Record<string, unknown>> = RestCall<JsonRequestBody<operations[Op]>, Params, Query>;
type RouteParams = { routeId: string };
type RequestParams = { routeId: string; requestId: string };

/** Where clients reach this server: WEBHOOK_PUBLIC_URL, else the request's own scheme and Host. */
export function baseUrlOf(config: Config, headers: NodeRequest['headers']): string {
  if (config.webhookPublicUrl) return config.webhookPublicUrl;
  const forwarded = String(headers['x-forwarded-proto'] ?? '').split(',')[0]?.trim();
  const scheme = forwarded === 'https' || forwarded === 'http' ? forwarded : config.tlsCert ? 'https' : 'http';
  const host = String(headers.host ?? headers[':authority'] ?? '');
  return `${scheme}://${/^[A-Za-z0-9.\-:[\]]+$/.test(host) ? host : `localhost:${config.port}`}`;
}

/** Handlers of the JSON operations of `contracts/openapi/webhooks.yaml`, keyed by operationId. */
export function webhookApiHandlers(webhooks: WebhookService, config: Config) {
  return {
    createRoute: async (call: Call<'createRoute'>): Promise<RestReply> => ({
      status: 201,
      body: await webhooks.createRoute(call.body, baseUrlOf(config, call.headers), call.remoteAddress),
    }),
    inspectRoute: async (call: Call<'inspectRoute', RouteParams, { limit?: number; before?: string }>): Promise<RestReply> => ({
      status: 200,
      body: await webhooks.inspect(call.params.routeId, call.query.limit ?? 50, call.query.before),
      headers: { 'cache-control': 'no-store' },
    }),
    deleteRoute: async (call: Call<'deleteRoute', RouteParams>): Promise<RestReply> => {
      await webhooks.deleteRoute(call.params.routeId);
      return { status: 204 };
    },
    getCapturedRequest: async (call: Call<'getCapturedRequest', RequestParams>): Promise<RestReply> => ({
      status: 200,
      body: await webhooks.describeCapture(call.params.routeId, call.params.requestId),
      headers: { 'cache-control': 'no-store' },
    }),
    getCapturedRequestBody: async (call: Call<'getCapturedRequestBody', RequestParams>): Promise<RestReply> => {
      const capture = await webhooks.getCapture(call.params.routeId, call.params.requestId);
      return {
        status: 200,
        body: capture.body,
        contentType: capture.contentType ?? 'application/octet-stream',
        // Captured bytes are attacker-chosen: never let them run as a page of this origin.
        headers: { 'content-security-policy': "default-src 'none'; sandbox", 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' },
      };
    },
    deleteCapturedRequest: async (call: Call<'deleteCapturedRequest', RequestParams>): Promise<RestReply> => {
      await webhooks.deleteCapture(call.params.routeId, call.params.requestId);
      return { status: 204 };
    },
  };
}
