import { createHash } from 'node:crypto';
import type { TokenService } from '../auth/token-service.js';
import { sendReply } from '../http/reply.js';
import type { Readiness } from './readiness.js';
import { GET_HEAD, type Route } from './route-table.js';

/**
 * The server's own routes, which no contract describes: liveness, readiness and the token key set
 * (the metrics endpoint is added beside them when metrics are on, src/server/metrics.ts).
 */
export function serverRoutes(deps: { tokens: TokenService; readiness: Readiness }): Route[] {
  return [
    {
      path: '/healthz',
      methods: GET_HEAD,
      handle: (req, res) => (sendReply(res, { status: 200, body: { status: 'ok' } }, undefined, req.method === 'HEAD'), '/healthz'),
    },
    {
      path: '/readyz',
      methods: GET_HEAD,
      // Answered from state the server keeps (src/server/readiness.ts): no database write, and no read under traffic.
      handle: async (req, res) => {
        const { ready, body, retryAfterSeconds } = await deps.readiness.status();
        const headers = retryAfterSeconds === undefined ? undefined : { 'retry-after': String(retryAfterSeconds) };
        sendReply(res, { status: ready ? 200 : 503, body, headers }, undefined, req.method === 'HEAD');
        return '/readyz';
      },
    },
    {
      path: '/.well-known/jwks.json',
      methods: GET_HEAD,
      // Cacheable for 5 minutes and revalidated by ETag. A key made by a rotation signs at once, so a
      // client meeting an unknown `kid` refetches (jose does, at most every 30 s); a retired key stays
      // listed while tokens it signed live (docs/iam.md).
      handle: (req, res) => {
        const body = Buffer.from(JSON.stringify(deps.tokens.jwks()));
        const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
        const headers = { 'cache-control': 'public, max-age=300', etag };
        const fresh = req.headers['if-none-match'] === etag;
        sendReply(
          res,
          fresh ? { status: 304, headers } : { status: 200, body, contentType: 'application/json; charset=utf-8', headers },
          undefined,
          req.method === 'HEAD',
        );
        return '/.well-known/jwks.json';
      },
    },
  ];
}
