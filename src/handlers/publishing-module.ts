import { existsSync, readFileSync } from 'node:fs';
import { ROOT } from '../server/paths.js';
import { AppError } from '../errors.js';
import { createRestApi } from '../http/rest-api.js';
import { createGraphqlHttp, jsonReply } from '../http/graphql-http.js';
import { depthLimitRule, costLimitRule } from '../graphql/query-limits.js';
import type { ModuleContext, ServerModule } from '../server/module.js';
import { createPublishingServices, type PublishingServices } from '../services/publishing/index.js';
import { bearerToken } from '../auth/bearer-token.js';
import { publishingApiHandlers, publishingTokenOf, renderProblem } from './publishing.js';
import { formatPublishingError, PUBLISHING_FIELD_COSTS, publishingGraphqlContext, publishingSchema, type PublishingGraphqlContext } from './publishing-graphql.js';

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
  const services = createPublishingServices(ctx.db.knex, ctx.tokens, ctx.config.accessTokenTtlSeconds, {
    maxFailures: ctx.config.signInMaxFailures,
    windowSeconds: ctx.config.signInWindowSeconds,
  });
  const { superuserEmail, superuserPassword } = ctx.config;
  if (superuserEmail && superuserPassword && (await services.writers.ensureSuperuser(superuserEmail, superuserPassword))) {
    ctx.logger.info({ superuser: superuserEmail }, 'created the configured publishing superuser');
  }

  const rest = await createRestApi({
    contractPath: `${ROOT}contracts/openapi/publishing.yaml`,
    handlers: publishingApiHandlers(services),
    renderError: renderProblem,
    commonHeaders: { Deprecation: 'true', Link: `<${ctx.config.publishingDeprecationLink}>; rel="deprecation"` },
    securityHandlers: {
      // A header that is present but unusable fails the scheme (401), rather than reading as anonymous.
      bearerAuth: (headers) => {
        if (headers.authorization === undefined) return undefined;
        const token = bearerToken(headers.authorization);
        if (!token) throw new AppError('unauthenticated', 'A valid access token is required.');
        return services.writers.authenticate(token);
      },
      accessToken: (headers) => (headers['x-access-token'] === undefined ? undefined : services.writers.authenticate(String(headers['x-access-token']))),
    },
    onError: ctx.onError,
  });

  const graphql = createGraphqlHttp<PublishingGraphqlContext>({
    schema: publishingSchema(`${ROOT}contracts/graphql/publishing.graphql`),
    validationRules: [depthLimitRule(GRAPHQL_MAX_DEPTH), costLimitRule({ maxCost: GRAPHQL_MAX_COST, assumedLimit: 100, fieldCosts: PUBLISHING_FIELD_COSTS })],
    maxTokens: GRAPHQL_MAX_TOKENS,
    context: async (req) => {
      const caller = await services.writers.authenticate(publishingTokenOf(req.headers)).catch(() => undefined);
      if (!caller) {
        const body = { errors: [{ message: 'A valid access token is required.', extensions: { code: 'UNAUTHENTICATED', status: 401 } }] };
        return { reply: jsonReply(401, body, { 'www-authenticate': 'Bearer' }) };
      }
      return publishingGraphqlContext(caller, services);
    },
    formatError: (error, requestId) => formatPublishingError(error, requestId, ctx.onError),
    onError: ctx.onError,
  });

  const docsFile = `${ROOT}docs/publishing.md`;
  const docs = existsSync(docsFile) ? readFileSync(docsFile) : Buffer.from('# Article Publishing API\n\nDeprecated: see the project documentation.\n');
  return {
    name: 'publishing',
    publishing: services,
    http: {
      matches: (path) => path === '/v1' || path.startsWith('/v1/') || path === '/graphql' || path === DOCS_PATH,
      handle: async (req, res, requestId) => {
        const path = (req.url ?? '/').split('?', 1)[0];
        if (path === '/graphql') {
          await graphql(req, res, requestId);
          return '/graphql';
        }
        if (path === DOCS_PATH) {
          res.writeHead(200, { 'content-type': 'text/markdown; charset=utf-8', 'content-length': String(docs.length) });
          res.end(docs);
          return DOCS_PATH;
        }
        return rest.handle(req, res, requestId);
      },
    },
    restApis: { publishing: rest },
  };
}
