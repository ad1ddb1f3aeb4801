import http from 'node:http';
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import type { DescService } from '@bufbuild/protobuf';
import { createGrpcUnaryHandler } from './grpc-unary.js';
import { headerLinesKey, headerLinesOf } from './header-lines.js';
import { grpcUnaryServices, rpcPathsOf, rpcRoutes } from './rpc-routes.js';
import { cloudJsonRegistry } from '../handlers/cloud/json-registry.js';
import type { Config } from '../config.js';
import { createLogger, type Logger } from '../logger.js';
import { databaseOptionsOf, openDatabase, migrate, type Database } from '../store/database.js';
import { TokenService } from '../auth/token-service.js';
import type { UserService } from '../services/user-service.js';
import { sendReply, type NodeRequest, type NodeResponse } from '../http/reply.js';
import type { RestApi } from '../http/rest-api.js';
import { AppError, toAppError } from '../errors.js';
import { renderUserApiError } from '../handlers/users.js';
import { buildModules } from './modules.js';
import type { ModuleContext, ServerModule } from './module.js';
import { createExpressApp } from './express-app.js';
import { warnIfSchemaAhead } from './schema-standby.js';
import { createOnePortServer } from './protocol-switch.js';
import { Readiness, storeChecks } from './readiness.js';
import { Http2Guard } from './http2-guard.js';
import { requestIdOf } from './request-id.js';
import { clusterMetricsSource } from './cluster.js';
import {
  createMetricsEndpoint,
  grpcCodeName,
  restOperation,
  rpcOutcomeInterceptor,
  rpcOutcomeKey,
  rpcProtocolOf,
  ServerMetrics,
  type RequestProtocol,
  type RpcOutcome,
} from './metrics.js';
import { formatTraceparent, traceContextOf, traceLogFields } from './trace-context.js';
import { createCorsPolicy } from './cors.js';
import { grpcHealthModule } from '../handlers/grpc-health.js';
import { PgliteAnalyzer } from '../store/pglite-analyzer.js';
import { requestLogFields } from '../logger.js';
import { createContextValues } from '@connectrpc/connect';
import { clientAddressOf, connectionAddressOf, proxiedSourceOf, resolveRequestClient } from '../http/request-client.js';
import { resolveClientAddress } from '../services/client-address.js';

/** The log fields of a request served while the logger writes nothing (never read). */
const NO_LOG_FIELDS: Record<string, string> = Object.freeze({});

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
    modules.push({ name: 'metrics', http: { matches: (path) => path === '/metrics', handle: async (req, res) => (await serveMetrics(req, res), '/metrics') } });
  }
  const cors = config.corsOrigins.length > 0 ? createCorsPolicy(config.corsOrigins) : undefined;
  const restApis: Record<string, RestApi> = Object.assign({}, ...modules.map((module) => module.restApis ?? {}));
  const httpModules = modules.flatMap((module) => (module.http ? [module.http] : []));
  const expressApp = createExpressApp({
    tokens,
    readiness,
    renderError: renderServerError,
    onError,
  });
  // Every service goes to connect-node (all protocols) and, for native unary gRPC, to the fast path:
  // one list of RpcServices feeds both (and in-memory tests use the same entries).
  const servedServices: DescService[] = [];
  const rpcServices = modules.flatMap((module) => module.rpc?.(() => servedServices) ?? []);
  servedServices.push(...rpcServices.map((entry) => entry.service));
  // Request paths of every RPC served: the metric's operation label, never a path a client made up.
  const rpcPaths = rpcPathsOf(rpcServices);
  const rpcOutcomes = new WeakMap<object, RpcOutcome>();
  const rpc = connectNodeAdapter({
    contextValues: (req) => {
      const values = createContextValues();
      values.set(headerLinesKey, headerLinesOf(req.rawHeaders));
      const outcome = rpcOutcomes.get(req);
      if (outcome) values.set(rpcOutcomeKey, outcome);
      return values;
    },
    // Bounds every message read (after decompression: connect-node inflates with zlib's
    // maxOutputLength = readMaxBytes) and written; Connect unary bodies with a larger Content-Length
    // and envelopes announcing more are refused before they are buffered.
    readMaxBytes: config.rpcMaxMessageBytes,
    writeMaxBytes: config.rpcMaxMessageBytes,
    jsonOptions: { registry: cloudJsonRegistry },
    routes: rpcRoutes(rpcServices, [rpcOutcomeInterceptor], config.rpcMaxMessageBytes),
  });
  const logRequest = (
    requestId: string,
    method: string | undefined,
    route: string,
    status: number,
    started: number,
    trace: Record<string, string>,
    /** The request, or (native gRPC, which has none) a function that finds its client. */
    client: NodeRequest | (() => string | undefined),
    grpcStatus?: number,
  ) => {
    if (!logger.isLevelEnabled('info')) return;
    logger.info(
      {
        requestId,
        method,
        route,
        status,
        grpcStatus,
        ms: Math.round((performance.now() - started) * 10) / 10,
        remoteAddress: typeof client === 'function' ? client() : clientAddressOf(client),
        ...trace,
      },
      'request',
    );
  };
  /** The client of a native gRPC call (the fast path has no request object to keep it on). */
  const streamClientAddress = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): string | undefined => {
    const socket = stream.session?.socket;
    if (!config.trustProxy) return connectionAddressOf(socket);
    const facts = { peer: socket?.remoteAddress, proxied: proxiedSourceOf(socket), xForwardedFor: headers['x-forwarded-for'], forwarded: headers.forwarded };
    return resolveClientAddress(facts, config.trustProxy).address;
  };
  const grpcUnary = createGrpcUnaryHandler({ services: grpcUnaryServices(rpcServices), maxMessageBytes: config.rpcMaxMessageBytes });

  const dispatch = (req: NodeRequest, res: NodeResponse): void => {
    const started = performance.now();
    const requestId = requestIdOf(req.headers['x-request-id']);
    res.setHeader('x-request-id', requestId);
    // Behind trusted proxies: the client, found once from the forwarding headers (nothing without TRUST_PROXY).
    resolveRequestClient(req, config.trustProxy);
    // W3C trace context: the caller's trace (or a new one), this request's span on the response and
    // in every log line written while serving it.
    const trace = traceContextOf(req.headers.traceparent);
    res.setHeader('traceparent', formatTraceparent(trace));
    // RFC 9112 §3.2: a request with more than one Host is answered 400 (Node keeps the first and drops
    // the rest, so which host a proxy in front saw is uncertain). The connection is not reused.
    if (repeatsHost(req.rawHeaders)) {
      if (req.httpVersionMajor === 1) res.setHeader('connection', 'close');
      sendReply(res, renderServerError(new AppError('invalid_argument', 'A request must carry exactly one Host header.')), undefined, req.method === 'HEAD');
      logRequest(requestId, req.method, 'repeated Host', 400, started, NO_LOG_FIELDS, req);
      return;
    }
    // HTTP/1.1 and HTTP/2 REST: the fields reach every log line through AsyncLocalStorage, whose
    // first use turns on Node 20's promise hooks for every later promise (~10% of a REST read's CPU).
    // A logger that writes no line at all (LOG_LEVEL=silent) has nothing to carry them to (and no
    // fields object is made).
    if (logger.isLevelEnabled('fatal')) {
      const logFields = traceLogFields(trace);
      requestLogFields.run(logFields, () => serve(req, res, requestId, started, logFields));
    } else serve(req, res, requestId, started, NO_LOG_FIELDS);
  };

  const serve = (req: NodeRequest, res: NodeResponse, requestId: string, started: number, logFields: Record<string, string>): void => {
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt === -1 ? url : url.slice(0, queryAt);
    let route: string | Promise<string>;
    let protocol: RequestProtocol = req.httpVersionMajor === 2 ? 'h2' : 'http1';
    // The metric's operation: a template or a known RPC, so a client cannot mint new series. Unset:
    // `METHOD template` and the HTTP status (no closures made for the common case).
    let operation: ((template: string) => string) | undefined;
    let code: (() => string) | undefined;
    const owner = httpModules.find((candidate) => candidate.matches(path));
    if (cors && !owner?.corsExempt?.(path) && cors.handle(req, res)) {
      route = 'CORS preflight';
    } else if (owner) {
      const failed = (error: unknown) => {
        onError(error, requestId);
        // In the shape of the API that owns the path, its 5xx as generic as its own answers.
        if (!res.headersSent) sendReply(res, (owner.renderError ?? renderServerError)(toAppError(error), path), undefined, req.method === 'HEAD');
        operation = () => restOperation(req.method, 'failed');
        return path;
      };
      // A contract engine answers its template at once (no promise per request); other pages may take one.
      try {
        const handled = owner.handle(req, res, requestId);
        route = typeof handled === 'string' ? handled : handled.catch(failed);
      } catch (error) {
        route = failed(error);
      }
    } else if (isRpcPath(path)) {
      // RPC interceptors read the request id from the request: hand them the one this response carries.
      req.headers['x-request-id'] = requestId;
      const outcome: RpcOutcome = {};
      rpcOutcomes.set(req, outcome);
      protocol = rpcProtocolOf(req.headers['content-type']);
      operation = () => (rpcPaths.has(path) ? path.slice(1) : 'unmatched');
      // Errors raised before the interceptors (an unknown method, an unreadable request) leave no outcome.
      code = () =>
        outcome.code ?? (typeof res.getHeader('grpc-status') === 'string' ? grpcCodeName(Number(res.getHeader('grpc-status'))) : `HTTP_${res.statusCode}`);
      rpc(req, res);
      route = path;
    } else {
      // Health, readiness, key sets and the 404 of unknown paths, on HTTP/1.1 and HTTP/2 alike.
      expressApp(req, res);
      route = 'express';
      operation = () => {
        // express leaves the matched route on the request; the 404 has none.
        const matched = (req as { route?: { path?: unknown } }).route?.path;
        return restOperation(req.method, typeof matched === 'string' ? matched : 'unmatched');
      };
    }
    const finished = (template: string) => {
      logRequest(requestId, req.method, template, res.statusCode, started, logFields, req);
      metrics?.recordRequest(
        protocol,
        operation ? operation(template) : restOperation(req.method, template),
        code ? code() : String(res.statusCode),
        (performance.now() - started) / 1000,
      );
    };
    // A response finishes once: `on`, without once's wrapper per request.
    res.on('finish', () => {
      if (typeof route === 'string') finished(route);
      else void route.then(finished);
    });
  };

  // Its requests reach `dispatch` through the protocol switch, which refuses those it would not answer.
  const http1 = http.createServer({
    keepAliveTimeout: config.keepAliveTimeoutMs,
    headersTimeout: config.headersTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    // Node checks both timeouts on this interval (30 s by default, which would let a slow-header
    // client hold its socket that much longer than HEADERS_TIMEOUT_MS).
    connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(config.headersTimeoutMs / 4))),
  });
  // HTTP/2 streams: native unary gRPC takes the fast path; everything else goes through Node's
  // compatibility API (req/res) of a second, never-listening server to the same dispatcher.
  const h2Compat = http2.createServer({}, dispatch);
  // A bounded SETTINGS_MAX_CONCURRENT_STREAMS (Node's default is 2^32-1); rates and stalls are the guard's.
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: config.http2MaxConcurrentStreams } });
  const http2Guard = new Http2Guard({
    maxStreamsPerSecond: config.http2MaxStreamsPerSecond,
    maxResetsPerSecond: config.http2MaxResetsPerSecond,
    maxStreamsPerAddress: config.http2MaxStreamsPerAddress,
    stallTimeoutMs: config.http2StallTimeoutMs,
    cooldownMs: config.http2AbuseCooldownMs,
  });
  h2.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]) => {
    // Refused by the guard, or reset by the client before it was dispatched (rapid reset): nothing to serve.
    if (stream.closed) return;
    if (grpcUnary.accepts(headers)) {
      const started = performance.now();
      const requestId = requestIdOf(headers['x-request-id']);
      const trace = traceContextOf(headers.traceparent);
      const logFields = traceLogFields(trace);
      const path = headers[':path'] ?? '';
      const serveCall = () =>
        grpcUnary.handle(
          stream,
          headers,
          requestId,
          (code) => {
            logRequest(requestId, 'POST', path, 200, started, logFields, () => streamClientAddress(stream, headers), code);
            metrics?.recordRequest('grpc', rpcPaths.has(path) ? path.slice(1) : 'unmatched', grpcCodeName(code), (performance.now() - started) / 1000);
          },
          { traceparent: formatTraceparent(trace) },
          rawHeaders,
        );
      // As for HTTP dispatch: no AsyncLocalStorage (and so none of Node 20's promise hooks) when the logger writes nothing.
      if (logger.isLevelEnabled('fatal')) requestLogFields.run(logFields, serveCall);
      else serveCall();
    } else {
      h2Compat.emit('stream', stream, headers, flags, rawHeaders);
    }
  });
  const tlsOptions = config.tlsCert && config.tlsKey ? { cert: readFileSync(config.tlsCert, 'utf8'), key: readFileSync(config.tlsKey, 'utf8') } : undefined;
  const server = createOnePortServer({
    http1,
    serveHttp1: dispatch,
    http2: h2,
    tls: tlsOptions,
    firstByteTimeoutMs: config.firstByteTimeoutMs,
    http2IdleTimeoutMs: config.http2IdleTimeoutMs,
    http2Guard,
    trustProxy: config.trustProxy,
    proxyProtocol: config.proxyProtocol,
    maxAgeMs: config.maxConnectionAgeMs,
    maxAgeGraceMs: config.maxConnectionAgeGraceMs,
  });
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

/** Whether a request's raw header list names Host more than once. */
function repeatsHost(rawHeaders: string[]): boolean {
  let seen = false;
  for (let at = 0; at < rawHeaders.length; at += 2) {
    const name = rawHeaders[at]!;
    if (name.length !== 4 || name.toLowerCase() !== 'host') continue;
    if (seen) return true;
    seen = true;
  }
  return false;
}

/** gRPC, gRPC-Web and Connect calls all use `/<package>.<Service>/<Method>`; no REST path has a dot there. */
function isRpcPath(url: string): boolean {
  return /^\/[A-Za-z_][\w]*(\.[\w]+)+\/[A-Za-z_]\w*(\?|$)/.test(url);
}
