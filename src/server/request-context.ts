import type http2 from 'node:http2';
import type { Config } from '../config.js';
import { requestLogFields, type Logger } from '../logger.js';
import { withContextHeaders, type NodeRequest, type NodeResponse } from '../http/reply.js';
import { clientAddressOf, connectionAddressOf, proxiedSourceOf, resolveRequestClient } from '../http/request-client.js';
import { resolveClientAddress } from '../services/client-address.js';
import { requestIdOf } from './request-id.js';
import { formatTraceparent, traceContextOf, traceLogFields, type TraceContext } from './trace-context.js';
import type { RequestProtocol, ServerMetrics } from './metrics.js';

/** The log fields of a request served while the logger writes nothing (never read). */
const NO_LOG_FIELDS: Record<string, string> = Object.freeze({});

/** What every request carries from its first line to its log line: its id, trace and start time. */
export interface RequestContext {
  requestId: string;
  started: number;
  trace: TraceContext;
  /** The trace's log fields (the same frozen empty object when nothing is logged). */
  logFields: Record<string, string>;
}

/**
 * The cross-cutting work of every request, on every protocol: its id and W3C trace context, its
 * client (through trusted proxies), the log fields every line written while serving it carries,
 * and the request log line and metric once it is answered.
 */
export class RequestContexts {
  private readonly logsAnything: boolean;

  constructor(
    private readonly logger: Logger,
    private readonly metrics: ServerMetrics | undefined,
    private readonly trustProxy: Config['trustProxy'],
  ) {
    this.logsAnything = logger.isLevelEnabled('fatal');
  }

  /**
   * Opens an HTTP request: its id and traceparent on the response, its client found once from the
   * forwarding headers (nothing without TRUST_PROXY).
   */
  open(req: NodeRequest, res: NodeResponse): RequestContext {
    const started = performance.now();
    const requestId = requestIdOf(req.headers['x-request-id']);
    resolveRequestClient(req, this.trustProxy);
    // The caller's trace (or a new one), this request's span on the response and in every log line.
    const trace = traceContextOf(req.headers.traceparent);
    withContextHeaders(res, requestId, formatTraceparent(trace));
    return { requestId, started, trace, logFields: this.logsAnything ? traceLogFields(trace) : NO_LOG_FIELDS };
  }

  /** Opens a native gRPC call of the HTTP/2 fast path (no request object: the stream's headers). */
  openStream(headers: http2.IncomingHttpHeaders): RequestContext {
    const started = performance.now();
    const trace = traceContextOf(headers.traceparent);
    return { requestId: requestIdOf(headers['x-request-id']), started, trace, logFields: this.logsAnything ? traceLogFields(trace) : NO_LOG_FIELDS };
  }

  /**
   * Runs `serve` with the request's log fields reachable from every log line (AsyncLocalStorage).
   * Its first use turns on Node 20's promise hooks for every later promise (~10% of a REST read's
   * CPU): a logger that writes no line at all (LOG_LEVEL=silent) has nothing to carry them to.
   */
  run(context: RequestContext, serve: () => void): void {
    if (this.logsAnything) requestLogFields.run(context.logFields, serve);
    else serve();
  }

  /** Whether `run` carries anything (callers skip making its closure otherwise). */
  get carriesLogFields(): boolean {
    return this.logsAnything;
  }

  /** The request log line of an answered request. */
  log(
    context: RequestContext,
    method: string | undefined,
    route: string,
    status: number,
    /** The request, or (native gRPC, which has none) a function that finds its client. */
    client: NodeRequest | (() => string | undefined),
    grpcStatus?: number,
  ): void {
    if (!this.logger.isLevelEnabled('info')) return;
    this.logger.info(
      {
        requestId: context.requestId,
        method,
        route,
        status,
        grpcStatus,
        ms: Math.round((performance.now() - context.started) * 10) / 10,
        remoteAddress: typeof client === 'function' ? client() : clientAddressOf(client),
        ...context.logFields,
      },
      'request',
    );
  }

  /** The request metric of an answered request (labels bounded by the caller: templates, known RPCs). */
  record(context: RequestContext, protocol: RequestProtocol, operation: string, code: string): void {
    this.metrics?.recordRequest(protocol, operation, code, (performance.now() - context.started) / 1000);
  }

  /** Whether metrics are recorded (callers skip computing labels otherwise). */
  get measuring(): boolean {
    return this.metrics !== undefined;
  }

  /** The client of a native gRPC call (the fast path has no request object to keep it on). */
  streamClientAddress(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): string | undefined {
    const socket = stream.session?.socket;
    if (!this.trustProxy) return connectionAddressOf(socket);
    const facts = { peer: socket?.remoteAddress, proxied: proxiedSourceOf(socket), xForwardedFor: headers['x-forwarded-for'], forwarded: headers.forwarded };
    return resolveClientAddress(facts, this.trustProxy).address;
  }
}
