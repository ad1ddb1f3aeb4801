import { ROOT } from '../../server/paths.js';
import { createRestApi, type RestApi } from '../../http/rest-api.js';
import type { NodeRequest, NodeResponse } from '../../http/reply.js';
import type { ModuleContext, ServerModule } from '../../server/module.js';
import { WebhookService } from '../../services/webhooks/webhook-service.js';
import { renderProblemDetails } from '../../http/problem-details.js';
import { webhookApiHandlers } from '../../handlers/webhooks.js';
import { CAPTURE_PATH, createCaptureHandler } from '../../handlers/webhook-capture.js';
import { createInspectorPages } from '../../handlers/webhook-inspector-page.js';

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const PAGE_OR_STREAM = new RegExp(`^/inspect/(${UUID})(/stream)?/?$`);

/**
 * The webhook inspector (docs/webhooks.md, contracts/openapi/webhooks.yaml). Capture runs on plain node:http
 * for speed and byte fidelity; the JSON operations go through the contract engine; the HTML page,
 * its assets, `GET /inspect` and the event stream are served here directly.
 */
export async function webhooksModule(ctx: ModuleContext): Promise<ServerModule & { webhooks: WebhookService }> {
  const { config, db } = ctx;
  const webhooks = new WebhookService(db.knex, config, (error, worker) => ctx.onError(error, worker));
  const metrics = ctx.metrics;
  if (metrics) webhooks.observeCaptureBatches((batch) => metrics.observeCaptureBatch(batch));
  const api = restrictCaptureOperations(
    await createRestApi({
      contractPath: `${ROOT}contracts/openapi/webhooks.yaml`,
      handlers: webhookApiHandlers(webhooks, config),
      renderError: renderProblemDetails,
      // GET /inspect creates a route; a HEAD must not.
      unsafeGets: ['openNewInspector'],
      onError: ctx.onError,
    }),
  );
  const capture = createCaptureHandler(webhooks, config.webhookMaxBody, ctx.onError);
  const pages = createInspectorPages(webhooks, config);

  async function handle(req: NodeRequest, res: NodeResponse, requestId: string): Promise<string> {
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt === -1 ? url : url.slice(0, queryAt);
    const captured = CAPTURE_PATH.exec(path);
    if (captured) return capture(req, res, requestId, captured[1]!);
    const method = req.method ?? 'GET';
    if (method === 'GET' || method === 'HEAD') {
      if (pages.asset(path, res)) return '/inspect-assets/*';
      if ((path === '/inspect' || path === '/inspect/') && method === 'GET') {
        await pages.openNew(req, res);
        return '/inspect';
      }
      const page = PAGE_OR_STREAM.exec(path);
      if (page && page[2]) {
        await pages.stream(page[1]!, req, res);
        return '/inspect/{routeId}/stream';
      }
      if (page && !/json/i.test(String(req.headers.accept ?? ''))) {
        await pages.page(page[1]!, res);
        return '/inspect/{routeId}';
      }
    }
    return api.handle(req, res, requestId);
  }

  return {
    name: 'webhooks',
    webhooks,
    http: {
      matches: (path) =>
        CAPTURE_PATH.test(path) || path === '/routes' || path === '/inspect' || path.startsWith('/inspect/') || path.startsWith('/inspect-assets/'),
      handle,
      renderError: renderProblemDetails,
      // A sender's OPTIONS is captured like any other request, not answered as a CORS preflight.
      corsExempt: (path) => CAPTURE_PATH.test(path),
    },
    restApis: { webhooks: api },
    async start() {
      await webhooks.start(db, (channel) => ctx.logger.warn({ channel }, 'database listener reconnected; catching up'));
    },
    drain() {
      pages.closeStreams();
    },
    async stop() {
      await webhooks.stop();
    },
  };
}

/**
 * OpenAPI path templates cannot say "the first segment is a UUID", so `/{routeId}` would also
 * match `/healthz` or another API's paths when a test asks which contract a path belongs to. The
 * capture operations only match when the path really starts with a UUID.
 */
function restrictCaptureOperations(rest: RestApi): RestApi {
  const router = rest.api.router;
  const match = router.matchOperation.bind(router);
  router.matchOperation = ((request: Parameters<typeof match>[0], strict?: boolean) => {
    const operation = match(request, strict as never);
    if (operation && operation.path.startsWith('/{routeId}') && !CAPTURE_PATH.test(request.path)) {
      if (strict) throw new Error('404-notFound: no route matches request');
      return undefined;
    }
    return operation;
  }) as typeof router.matchOperation;
  return rest;
}
