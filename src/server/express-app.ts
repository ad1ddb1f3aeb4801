import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { Database } from '../store/database.js';
import type { TokenService } from '../auth/token-service.js';

export interface ExpressAppDeps {
  db: Database;
  tokens: TokenService;
  isReady(): boolean;
  /** Routers of other parts (pages, token exchange, GraphQL), mounted before the 404. */
  routers?: express.Router[];
}

/**
 * The routes that no OpenAPI contract describes: health, readiness, key sets, pages.
 * Unknown routes and broken bodies still answer JSON in the server's default error shape.
 */
export function createExpressApp(deps: ExpressAppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const reachable = await deps.db.knex.raw('select 1').then(() => true, () => false);
    const ready = reachable && deps.isReady();
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not ready', database: reachable ? 'ok' : 'unreachable' });
  });
  app.get('/.well-known/jwks.json', (_req, res) => {
    res.json(deps.tokens.jwks());
  });
  for (const router of deps.routers ?? []) app.use(router);
  app.use((_req, res) => {
    res.status(404).json({ statusCode: 404, message: 'Not Found', error: 'Not Found' });
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status = typeof error === 'object' && error !== null && 'status' in error && typeof error.status === 'number' && error.status < 500 ? error.status : 500;
    const message = status === 500 ? 'Internal Server Error' : 'Bad Request';
    res.status(status).json({ statusCode: status, message, error: message });
  });
  return app;
}
