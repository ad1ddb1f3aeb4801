import { settingsOf } from '../../config.js';
import { ROOT } from '../../server/paths.js';
import { createRestApi } from '../../http/rest-api.js';
import type { ModuleContext, ServerModule } from '../../server/module.js';
import { GET_HEAD, type Route } from '../../server/route-table.js';
import { WebhookService } from '../../services/webhooks/webhook-service.js';
import { renderProblemDetails } from '../../http/problem-details.js';
import { webhookApiHandlers } from '../../handlers/webhooks.js';
import { CAPTURE_PATH, createCaptureHandler } from '../../handlers/webhook-capture.js';
import { createInspectorPages } from '../../handlers/webhook-inspector-page.js';

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const INSPECTOR_PAGE = new RegExp(`^/inspect/(${UUID})/?$`);
const EVENT_STREAM = new RegExp(`^/inspect/(${UUID})/stream/?$`);

/**
 * The webhook inspector (docs/webhooks.md, contracts/openapi/webhooks.yaml). Capture runs on plain node:http
 * for speed and byte fidelity; the JSON operations go through the contract engine; the HTML page,
 * its assets, `GET /inspect` and the event stream are served here directly.
 */
export async function webhooksModule(ctx: ModuleContext): Promise<ServerModule & { webhooks: WebhookService }> {
  const { config, db } = ctx;
  const webhooks = new WebhookService(db.knex, settingsOf(config, 'webhooks'), (error, worker) => ctx.onError(error, worker));
  const metrics = ctx.metrics;
  if (metrics) webhooks.observeCaptureBatches((batch) => metrics.observeCaptureBatch(batch));
  const api = await createRestApi({
    contractPath: `${ROOT}contracts/openapi/webhooks.yaml`,
    handlers: webhookApiHandlers(webhooks, config),
    renderError: renderProblemDetails,
    // GET /inspect creates a route; a HEAD must not.
    unsafeGets: ['openNewInspector'],
    onError: ctx.onError,
  });
  const capture = createCaptureHandler(webhooks, config.webhookMaxBody, ctx.onError);
  const pages = createInspectorPages(webhooks, config);

  const routeIdOf = (pattern: RegExp, path: string): string => pattern.exec(path)?.[1] ?? '';
  const problems = { renderError: renderProblemDetails };
  // Who serves which path of the webhook inspector: this list, first fit first (route-table.ts).
  const routes: Route[] = [
    // Every method of every path under a route id is captured; a sender's OPTIONS too, never a CORS preflight.
    {
      pattern: CAPTURE_PATH,
      corsExempt: true,
      handle: (req, res, requestId, path) => capture(req, res, requestId, routeIdOf(CAPTURE_PATH, path)),
      ...problems,
    },
    // An asset this server does not have is the contract's 404.
    {
      prefix: '/inspect-assets/',
      methods: GET_HEAD,
      handle: (req, res, requestId, path) => (pages.asset(path, res) ? '/inspect-assets/*' : api.handle(req, res, requestId)),
      ...problems,
    },
    { path: '/inspect', methods: ['GET'], handle: (req, res) => pages.openNew(req, res).then(() => '/inspect'), ...problems },
    { path: '/inspect/', methods: ['GET'], handle: (req, res) => pages.openNew(req, res).then(() => '/inspect'), ...problems },
    {
      pattern: EVENT_STREAM,
      methods: GET_HEAD,
      handle: (req, res, _id, path) => pages.stream(routeIdOf(EVENT_STREAM, path), req, res).then(() => '/inspect/{routeId}/stream'),
      ...problems,
    },
    // The inspector page for browsers; a client asking for JSON gets the contract's operation.
    {
      pattern: INSPECTOR_PAGE,
      methods: GET_HEAD,
      handle: (req, res, requestId, path) =>
        /json/i.test(String(req.headers.accept ?? ''))
          ? api.handle(req, res, requestId)
          : pages.page(routeIdOf(INSPECTOR_PAGE, path), res).then(() => '/inspect/{routeId}'),
      ...problems,
    },
    // The contract's JSON operations (and its 404/405 in problem details).
    { prefix: '/routes', handle: api.handle, ...problems },
    { prefix: '/inspect', handle: api.handle, ...problems },
    { prefix: '/inspect-assets/', handle: api.handle, ...problems },
  ];

  return {
    name: 'webhooks',
    webhooks,
    routes,
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
