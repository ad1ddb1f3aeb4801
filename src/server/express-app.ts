import { createHash } from 'node:crypto';
import http from 'node:http';
import http2 from 'node:http2';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { Readiness } from './readiness.js';
import type { TokenService } from '../auth/token-service.js';
import { AppError, toAppError } from '../errors.js';
import { sendReply, type NodeRequest, type NodeResponse, type RestReply } from '../http/reply.js';

export interface ExpressAppDeps {
  tokens: TokenService;
  /** What `/readyz` answers. */
  readiness: Readiness;
  /** The server's own error shape, for the 404 of unknown paths and failures of these routes. */
  renderError(error: AppError): RestReply;
  /** Logs a failure of these routes under the request id the response carries. */
  onError(error: unknown, requestId: string): void;
  /** Routers of other parts (pages, token exchange, GraphQL), mounted before the 404. */
  routers?: express.Router[];
}

/** Serves one request of either HTTP version. */
export type NonContractHandler = (req: NodeRequest, res: NodeResponse) => void;

/**
 * The routes that no OpenAPI contract describes: health, readiness, key sets, pages, over HTTP/1.1
 * and HTTP/2. Unknown routes and broken bodies still answer JSON in the server's default error shape.
 * GET routes answer HEAD too (express runs the GET route and sends no body).
 *
 * Express gives every request and response its own prototype, which inherits from node:http's
 * IncomingMessage/ServerResponse; set on an HTTP/2 compatibility object, those stream internals
 * are missing and the process crashes (expressjs/express#3388, #6580). The HTTP/2 face is the same
 * express, routes and middleware, whose request/response prototypes carry express's methods over
 * Http2ServerRequest/Http2ServerResponse instead: the known bridge, and all express needs here
 * (headers, status, `res.json`, `res.end`) exists on both.
 */
export function createExpressApp(deps: ExpressAppDeps): NonContractHandler {
  const routes = express.Router();
  routes.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // Answered from state the server keeps (src/server/readiness.ts): no database write, and no read under traffic.
  routes.get('/readyz', async (_req, res) => {
    const { ready, body, retryAfterSeconds } = await deps.readiness.status();
    if (retryAfterSeconds !== undefined) res.setHeader('retry-after', String(retryAfterSeconds));
    res.status(ready ? 200 : 503).json(body);
  });
  routes.get('/.well-known/jwks.json', (req, res) => {
    // Cacheable for 5 minutes and revalidated by ETag. A key made by a rotation signs at once, so a
    // client meeting an unknown `kid` refetches (jose does, at most every 30 s); a retired key stays
    // listed while tokens it signed live (docs/iam.md).
    const body = JSON.stringify(deps.tokens.jwks());
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    res.set({ 'cache-control': 'public, max-age=300', etag });
    if (req.headers['if-none-match'] === etag) res.status(304).end();
    else res.type('application/json').send(body);
  });
  for (const router of deps.routers ?? []) routes.use(router);

  const http1 = expressFace(routes, deps);
  const h2 = expressFace(routes, deps);
  rebase(h2, 'request', http2.Http2ServerRequest.prototype);
  rebase(h2, 'response', http2.Http2ServerResponse.prototype);
  return (req, res) => {
    if (req instanceof http2.Http2ServerRequest) h2(req as unknown as http.IncomingMessage, res as unknown as http.ServerResponse);
    else http1(req, res as http.ServerResponse);
  };
}

function expressFace(routes: express.Router, { renderError, onError }: Pick<ExpressAppDeps, 'renderError' | 'onError'>): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(routes);
  app.use((req: Request, res: Response) => {
    sendReply(res, renderError(new AppError('not_found', 'Not Found')), undefined, req.method === 'HEAD');
  });
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const failure = expressFailure(error);
    if (failure.code === 'internal') onError(error, String(res.getHeader('x-request-id') ?? ''));
    sendReply(res, renderError(failure), undefined, req.method === 'HEAD');
  });
  return app;
}

/**
 * express and its middleware mark the client's faults with a 4xx `status` (an unreadable body, a body
 * over a limit); anything else is the server's and is classified like every other failure.
 */
function expressFailure(error: unknown): AppError {
  const status = typeof error === 'object' && error !== null && 'status' in error && typeof error.status === 'number' ? error.status : 500;
  if (status === 413) return new AppError('content_too_large', 'The request body is too large.', { cause: error });
  if (status >= 400 && status < 500) return new AppError('invalid_argument', 'Bad Request', { cause: error });
  return toAppError(error);
}

/** Gives `app.request` or `app.response` express's own methods over another node prototype. */
function rebase(app: Express, which: 'request' | 'response', nodePrototype: object): void {
  const methods = which === 'request' ? express.request : express.response;
  const own = Object.create(nodePrototype, Object.getOwnPropertyDescriptors(methods)) as object;
  // As express's createApplication does: the per-app object knows its app.
  app[which] = Object.create(own, { app: { configurable: true, enumerable: true, writable: true, value: app } });
}
