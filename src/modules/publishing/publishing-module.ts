import { existsSync, readFileSync } from 'node:fs';
import { settingsOf } from '../../config.js';
import { ROOT } from '../../server/paths.js';
import { AppError } from '../../errors.js';
import { createRestApi } from '../../http/rest-api.js';
import { sendReply, type NodeRequest, type NodeResponse, type RestReply } from '../../http/reply.js';
import { createGraphqlHttp, restReplyOf } from '../../http/graphql-http.js';
import { explorerPage, wantsGraphqlExplorer } from '../../handlers/browser-pages.js';
import { markdownPage, type HtmlPage } from '../../handlers/markdown-page.js';
import { depthLimitRule, costLimitRule } from '../../graphql/query-limits.js';
import type { ModuleContext, ServerModule } from '../../server/module.js';
import { GET_HEAD } from '../../server/route-table.js';
import { createPublishingServices, type PublishingServices } from '../../services/publishing/index.js';
import { throttleOptionsOf } from '../../services/sign-in-throttle.js';
import { renderProblemDetails } from '../../http/problem-details.js';
import { publishingApiHandlers, publishingAuthenticator } from '../../handlers/publishing.js';
import {
  formatPublishingError,
  renderPublishingGraphqlError,
  PUBLISHING_FIELD_COSTS,
  publishingGraphqlContext,
  publishingSchema,
  type PublishingGraphqlContext,
} from '../../handlers/publishing-graphql.js';

// Generous for real clients (the standard introspection query is 13 deep), fatal for abuse.
export const GRAPHQL_MAX_DEPTH = 15;
export const GRAPHQL_MAX_COST = 5000;
// The standard introspection query has ~250 tokens; 5000 is a large hand-written query.
export const GRAPHQL_MAX_TOKENS = 5000;
const DOCS_PATH = '/docs/publishing.md';

/**
 * The Article Publishing API: `/v1` (contracts/openapi/publishing.yaml, deprecated, problem details)
 * and `/graphql` (contracts/graphql/publishing.graphql), both over one service layer.
 */
export async function publishingModule(ctx: ModuleContext): Promise<ServerModule & { publishing: PublishingServices }> {
  // The publishing family's settings, and the users family's sign-in rules (tokens, throttle) it shares.
  const { superuserEmail, superuserPassword, publishingDeprecationLink } = settingsOf(ctx.config, 'publishing');
  const signIn = settingsOf(ctx.config, 'users');
  const services = createPublishingServices(ctx.db.knex, ctx.tokens, signIn.accessTokenTtlSeconds, throttleOptionsOf(signIn));
  const metrics = ctx.metrics;
  if (metrics) services.writers.observeSignIns((outcome) => metrics.observeSignIn('publishing', outcome));
  if (superuserEmail && superuserPassword && (await services.writers.ensureSuperuser(superuserEmail, superuserPassword))) {
    ctx.logger.info({ superuser: superuserEmail }, 'created the configured publishing superuser');
  }

  const authenticate = publishingAuthenticator(services.writers);
  const rest = await createRestApi({
    contractPath: `${ROOT}contracts/openapi/publishing.yaml`,
    handlers: publishingApiHandlers(services),
    renderError: renderProblemDetails,
    commonHeaders: { Deprecation: 'true', Link: `<${publishingDeprecationLink}>; rel="deprecation"` },
    // Both schemes read the request's credentials the one way /graphql does too (publishingAuthenticator).
    securityHandlers: { bearerAuth: authenticate, accessToken: authenticate },
    onError: ctx.onError,
  });

  const graphql = createGraphqlHttp<PublishingGraphqlContext>({
    schema: publishingSchema(`${ROOT}contracts/graphql/publishing.graphql`),
    validationRules: [depthLimitRule(GRAPHQL_MAX_DEPTH), costLimitRule({ maxCost: GRAPHQL_MAX_COST, assumedLimit: 100, fieldCosts: PUBLISHING_FIELD_COSTS })],
    maxTokens: GRAPHQL_MAX_TOKENS,
    context: async (req) => {
      const caller = await authenticate(req.headers);
      if (!caller) throw new AppError('unauthenticated', 'A valid access token is required.');
      return publishingGraphqlContext(caller, services);
    },
    renderError: renderPublishingGraphqlError,
    formatError: (error, requestId) => formatPublishingError(error, requestId, ctx.onError),
    onError: ctx.onError,
  });

  const { html: explorerHtml, csp: explorerCsp } = explorerPage();
  const explorer = Buffer.from(explorerHtml);
  const docsFile = `${ROOT}docs/publishing.md`;
  const docs = existsSync(docsFile) ? readFileSync(docsFile) : Buffer.from('# Article Publishing API\n\nDeprecated: see the project documentation.\n');
  let docsPage: HtmlPage | null | undefined;
  /** `/graphql`: a browser opening it gets the explorer; API clients keep GraphQL over HTTP. */
  const serveGraphql = async (req: NodeRequest, res: NodeResponse, requestId: string): Promise<string> => {
    if (!wantsGraphqlExplorer(req)) {
      await graphql(req, res, requestId);
      return '/graphql';
    }
    const headers = {
      'content-security-policy': explorerCsp,
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      vary: 'Accept',
    };
    sendReply(res, { status: 200, body: explorer, contentType: 'text/html; charset=utf-8', headers }, undefined, req.method === 'HEAD');
    return '/graphql (explorer)';
  };
  /** The API's guide: a browser (Accept: text/html) gets the page rendered, once, on first asking; anyone else the markdown. */
  const serveDocs = (req: NodeRequest, res: NodeResponse): string => {
    const page = !wantsHtml(req.headers.accept) ? null : docsPage !== undefined ? docsPage : (docsPage = markdownPage(docs.toString('utf8')) ?? null);
    const reply: RestReply = page
      ? { status: 200, body: page.body, contentType: page.headers['content-type'], headers: page.headers }
      : { status: 200, body: docs, contentType: 'text/markdown; charset=utf-8', headers: { vary: 'Accept' } };
    sendReply(res, reply, undefined, req.method === 'HEAD');
    return DOCS_PATH;
  };
  return {
    name: 'publishing',
    publishing: services,
    routes: [
      { prefix: '/v1', handle: rest.handle, renderError: renderProblemDetails },
      { path: '/graphql', handle: serveGraphql, renderError: (error) => restReplyOf(renderPublishingGraphqlError(error)) },
      { path: DOCS_PATH, methods: GET_HEAD, handle: serveDocs },
    ],
    restApis: { publishing: rest },
  };
}

const wantsHtml = (accept: string | undefined): boolean => /\btext\/html\b/.test(accept ?? '');
