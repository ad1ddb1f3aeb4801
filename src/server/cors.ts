import { sendReply, type NodeRequest, type NodeResponse } from '../http/reply.js';

/**
 * Request headers a browser client may send: the REST APIs' own (bearer tokens, the cloud API's
 * idempotency key and reset mask, trace context) and those of Connect and gRPC-Web, as
 * @connectrpc/connect's `cors.allowedHeaders` lists them.
 */
const CORS_ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'x-access-token',
  'x-request-id',
  'x-idempotency-key',
  'x-resetmask',
  'if-match',
  'if-none-match',
  'traceparent',
  'tracestate',
  'connect-protocol-version',
  'connect-timeout-ms',
  'connect-content-encoding',
  'connect-accept-encoding',
  'content-encoding',
  'grpc-timeout',
  'grpc-encoding',
  'grpc-accept-encoding',
  'grpc-message-type',
  'x-grpc-web',
  'x-user-agent',
];

/** Response headers a browser client may read beyond the safelisted ones: RPC status, errors, paging, tracing. */
const CORS_EXPOSED_HEADERS = [
  'grpc-status',
  'grpc-message',
  'grpc-status-details-bin',
  'grpc-encoding',
  'connect-content-encoding',
  'content-encoding',
  'x-request-id',
  'traceparent',
  'retry-after',
  'location',
  'etag',
  'link',
  'deprecation',
  'www-authenticate',
];

const CORS_ALLOWED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

// Chromium caps the preflight cache at 2 h; Firefox at 24 h.
const MAX_AGE_SECONDS = 7200;

/** Decides and writes the CORS headers of one request. */
export interface CorsPolicy {
  /**
   * Adds the CORS headers a request from an allowed origin gets; answers a preflight (OPTIONS with
   * `Access-Control-Request-Method`) itself with 204 and returns true. Requests without `Origin`,
   * or from another origin, go on untouched (the browser then refuses to hand the answer over).
   */
  handle(req: NodeRequest, res: NodeResponse): boolean;
}

/**
 * CORS for browser clients of the REST APIs and of Connect/gRPC-Web, for the origins of
 * `CORS_ORIGINS` (`*` = any). No credentials: every API authenticates with a header token, never
 * a cookie, so `Access-Control-Allow-Credentials` is not sent.
 */
export function createCorsPolicy(origins: readonly string[]): CorsPolicy {
  const anyOrigin = origins.includes('*');
  const allowed = new Set(origins);
  const allowHeaders = CORS_ALLOWED_HEADERS.join(', ');
  const exposeHeaders = CORS_EXPOSED_HEADERS.join(', ');
  const allowMethods = CORS_ALLOWED_METHODS.join(', ');
  return {
    handle(req, res) {
      // The answer depends on Origin whenever a list is configured: caches must keep them apart.
      if (!anyOrigin) res.setHeader('vary', 'Origin');
      const origin = req.headers.origin;
      if (typeof origin !== 'string' || !(anyOrigin || allowed.has(origin.toLowerCase()))) return false;
      res.setHeader('access-control-allow-origin', anyOrigin ? '*' : origin);
      if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
        res.setHeader('access-control-allow-methods', allowMethods);
        res.setHeader('access-control-allow-headers', allowHeaders);
        res.setHeader('access-control-max-age', String(MAX_AGE_SECONDS));
        sendReply(res, { status: 204 }, undefined, false);
        return true;
      }
      res.setHeader('access-control-expose-headers', exposeHeaders);
      return false;
    },
  };
}
