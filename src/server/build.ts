import type { DescService } from '@bufbuild/protobuf';
import { createGrpcUnaryHandler } from './grpc-fast-path/unary-handler.js';
import { grpcUnaryServices, rpcPathsOf } from './rpc-routes.js';
import type { Config } from '../config.js';
import { createLogger, type Logger } from '../logger.js';
import { databaseOptionsOf, openDatabase, migrate, type Database } from '../store/database.js';
import { TokenService } from '../auth/token-service.js';
import type { UserService } from '../services/user-service.js';
import type { RestApi } from '../http/rest-api.js';
import { renderUserApiError } from '../handlers/users.js';
import { buildModules } from './modules.js';
import type { ModuleContext, ServerModule } from './module.js';
import { warnIfSchemaAhead } from './schema-standby.js';
import { Readiness, storeChecks } from './readiness.js';
import { clusterMetricsSource } from './cluster.js';
import { createMetricsEndpoint, ServerMetrics } from './metrics.js';
import { createCorsPolicy } from './cors.js';
import { grpcHealthModule } from '../handlers/grpc-health.js';
import { PgliteAnalyzer } from '../store/pglite/analyzer.js';
import { GET_HEAD, RouteTable } from './route-table.js';
import { serverRoutes } from './server-routes.js';
import { rpcRoute } from './rpc-http.js';
import { RequestContexts } from './request-context.js';
import { createDispatcher } from './dispatch.js';
import { createListeners } from './listeners.js';
import { handOffStreams } from './h2-streams.js';

export interface BuildOverrides {
  /** An already opened database (tests pass one made from a migrated template). */
  database?: Database;
  logger?: Logger;
  /** Changes the modules before they are served (sandbox mode, src/sandbox: Prefer, response checks, reset). */
  extend?(modules: ServerModule[], context: ModuleContext): Promise<void> | void;
}

export interface App {
  config: Config;
  db: Database;
  logger: Logger;
  tokens: TokenService;
  users: UserService;
  /** The REST contract engines, by contract name; tests validate responses against them. */
  restApis: Record<string, RestApi>;
  /** The one route table (who serves which path), as the dispatcher uses it. */
  routes: RouteTable;
  /** Starts listening; answers the bound port (0 picks a free one). */
  listen(port?: number, host?: string): Promise<number>;
  /**
   * Graceful shutdown: not ready at once, serve on for SHUTDOWN_DELAY_MS, then stop accepting, end
   * event streams and connections (Connection: close, GOAWAY), finish in-flight requests within
   * SHUTDOWN_GRACE_MS, stop background work (claims released), close the store. Calling it again
   * ends what is left of the delay.
   */
  close(): Promise<void>;
}

/** Builds the whole server, ready to listen: store migrated, services wired, every protocol on one port. */
export async function build(config: Config, overrides: BuildOverrides = {}): Promise<App> {
  const logger = overrides.logger ?? createLogger(config.logLevel);
  const db = overrides.database ?? (await openDatabase(databaseOptionsOf(config)));
  if (config.migrate) warnIfSchemaAhead(logger, (await migrate(db)).unknown);
  const tokens = await TokenService.create(db.knex);
  const onError = (error: unknown, requestId: string) => logger.error({ err: error, requestId }, 'request failed');
  const metrics = config.metricsEnabled ? new ServerMetrics(db) : undefined;
  const context: ModuleContext = { config, db, logger, tokens, onError, metrics };
  const { modules, users } = await buildModules(context);
  await overrides.extend?.(modules, context);
  // One line per condition: a check another part needs (the schema's) is added the same way.
  const readiness = new Readiness();
  const storeHealth = storeChecks(db);
  for (const check of storeHealth.checks) readiness.add(check);
  modules.push(grpcHealthModule({ readiness }));
  if (db.maintenance) {
    // PGlite has no autovacuum: the server keeps the planner's statistics itself.
    const analyzer = new PgliteAnalyzer(db.maintenance, {
      onError: (error) => logger.error({ err: error }, 'PGlite statistics maintenance failed'),
      onAnalyzed: (tables, ms) => logger.info({ tables, ms: Math.round(ms) }, 'PGlite planner statistics refreshed (ANALYZE)'),
    });
    modules.push({ name: 'pglite-analyzer', start: () => analyzer.start(), stop: () => analyzer.stop() });
  }
  if (metrics) {
    const serveMetrics = createMetricsEndpoint(
      metrics,
      { token: config.metricsToken, public: config.metricsPublic },
      await clusterMetricsSource(metrics.registry),
    );
    modules.push({
      name: 'metrics',
      routes: [{ path: '/metrics', methods: GET_HEAD, handle: async (req, res) => (await serveMetrics(req, res), '/metrics') }],
    });
  }
  const cors = config.corsOrigins.length > 0 ? createCorsPolicy(config.corsOrigins) : undefined;
  const restApis: Record<string, RestApi> = Object.assign({}, ...modules.map((module) => module.restApis ?? {}));
  // Every service goes to connect-node (all protocols) and, for native unary gRPC, to the fast path:
  // one list of RpcServices feeds both (and in-memory tests use the same entries).
  const servedServices: DescService[] = [];
  const rpcServices = modules.flatMap((module) => module.rpc?.(() => servedServices) ?? []);
  servedServices.push(...rpcServices.map((entry) => entry.service));
  // The one route table: the server's own routes, every module's in order, then every RPC.
  const table = new RouteTable([
    ...serverRoutes({ tokens, readiness }),
    ...modules.flatMap((module) => module.routes ?? []),
    rpcRoute(rpcServices, config.rpcMaxMessageBytes),
  ]);
  const contexts = new RequestContexts(logger, metrics, config.trustProxy);
  const dispatch = createDispatcher({ table, contexts, cors, renderError: renderServerError, onError });
  const grpcUnary = createGrpcUnaryHandler({ services: grpcUnaryServices(rpcServices), maxMessageBytes: config.rpcMaxMessageBytes });
  const server = createListeners(config, dispatch, (h2) => handOffStreams(h2, { grpcUnary, rpcPaths: rpcPathsOf(rpcServices), contexts, dispatch }));
  for (const module of modules) await module.start?.();

  let closing: Promise<void> | undefined;
  let endDelay: (() => void) | undefined;
  return {
    config,
    db,
    logger,
    tokens,
    users,
    restApis,
    routes: table,
    listen(port = config.port, host = config.host) {
      return server.listen(port, host);
    },
    close() {
      // A second call (a second SIGTERM or Ctrl-C) ends what is left of the delay.
      if (closing) {
        endDelay?.();
        return closing;
      }
      closing = (async () => {
        // Balancers learn first (/readyz 503, gRPC health NOT_SERVING) while everything is still
        // served; only then does the server drain (docs/operations.md, Shutdown).
        readiness.shutDown();
        if (config.shutdownDelayMs > 0) {
          logger.info({ delayMs: config.shutdownDelayMs }, 'not ready; serving on until balancers stop routing here');
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, config.shutdownDelayMs);
            endDelay = () => (clearTimeout(timer), resolve());
          });
        }
        // Stops accepting and closes idle connections at once; then endless responses (event streams,
        // health watches) end, so their connections close after them instead of at the grace.
        const closed = server.close(config.shutdownGraceMs);
        for (const module of modules) module.drain?.();
        await closed;
        for (const module of modules) await module.stop?.();
        storeHealth.detach();
        await db.close();
      })();
      return closing;
    },
  };
}

/**
 * The server's own error shape, for routes no contract describes (health, key set, the 404 of unknown
 * paths) and modules without a renderer: the users API's `{statusCode, message, error}` (docs/users-api.md).
 */
const renderServerError = renderUserApiError;
