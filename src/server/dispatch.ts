import { AppError, toAppError } from '../errors.js';
import { pathOf, sendReply, type NodeRequest, type NodeResponse, type RestReply } from '../http/reply.js';
import type { CorsPolicy } from './cors.js';
import { restOperation, type RequestProtocol } from './metrics.js';
import type { RequestContext, RequestContexts } from './request-context.js';
import type { Route, RouteTable } from './route-table.js';

export interface DispatchOptions {
  table: RouteTable;
  contexts: RequestContexts;
  cors?: CorsPolicy;
  /** The server's own error shape: the table's 404/405, and routes without a renderer. */
  renderError(error: AppError): RestReply;
  /** Logs an unexpected failure with its request id (the client only sees a generic 500). */
  onError(error: unknown, requestId: string): void;
}

/**
 * Serves every HTTP request of either version (all but native unary gRPC, src/server/h2-streams.ts):
 * opens its context, refuses a repeated Host, answers a CORS preflight, and hands the request to the
 * route the table finds, or answers the table's 404/405. Every answer is logged and counted once.
 */
export function createDispatcher(options: DispatchOptions): (req: NodeRequest, res: NodeResponse) => void {
  const { table, contexts, cors, renderError, onError } = options;

  const serve = (req: NodeRequest, res: NodeResponse, context: RequestContext): void => {
    const path = pathOf(req.url);
    const method = req.method ?? 'GET';
    const head = method === 'HEAD';
    const route = table.find(method, path);
    let template: string | Promise<string>;
    // A failure is logged under its path and counted as the method's `failed` operation.
    let failure = false;
    if (cors && !route?.corsExempt && cors.handle(req, res)) {
      template = 'CORS preflight';
    } else if (route) {
      const failed = (error: unknown): string => {
        onError(error, context.requestId);
        // In the shape of the API that owns the path, its 5xx as generic as its own answers.
        if (!res.headersSent) sendReply(res, (route.renderError ?? renderError)(toAppError(error)), undefined, head);
        failure = true;
        return path;
      };
      // A contract engine answers its template at once (no promise per request); other pages may take one.
      try {
        const handled = route.handle(req, res, context.requestId, path);
        template = typeof handled === 'string' ? handled : handled.catch(failed);
      } catch (error) {
        template = failed(error);
      }
    } else {
      const allow = table.allowed(path);
      const reply = allow.length === 0 ? renderError(new AppError('not_found', 'Not Found')) : methodNotAllowed(allow);
      sendReply(res, reply, undefined, head);
      template = 'unmatched';
    }
    // A response finishes once: `on`, without once's wrapper per request.
    res.on('finish', () => {
      if (typeof template === 'string') finished(req, res, context, route, path, template, failure);
      else void template.then((resolved) => finished(req, res, context, route, path, resolved, failure));
    });
  };

  const finished = (
    req: NodeRequest,
    res: NodeResponse,
    context: RequestContext,
    route: Route | undefined,
    path: string,
    template: string,
    failure: boolean,
  ): void => {
    contexts.log(context, req.method, template, res.statusCode, req);
    if (!contexts.measuring) return;
    const counted = route?.metrics;
    if (failure) contexts.record(context, httpProtocolOf(req), restOperation(req.method, 'failed'), String(res.statusCode));
    else if (counted) contexts.record(context, counted.protocol(req), counted.operation(req, path), counted.code(req, res));
    else contexts.record(context, httpProtocolOf(req), restOperation(req.method, template), String(res.statusCode));
  };

  return (req, res) => {
    const context = contexts.open(req, res);
    // RFC 9112 §3.2: a request with more than one Host is answered 400 (Node keeps the first and drops
    // the rest, so which host a proxy in front saw is uncertain). The connection is not reused.
    if (repeatsHost(req.rawHeaders)) {
      if (req.httpVersionMajor === 1) res.setHeader('connection', 'close');
      sendReply(res, renderError(new AppError('invalid_argument', 'A request must carry exactly one Host header.')), undefined, req.method === 'HEAD');
      contexts.log(context, req.method, 'repeated Host', 400, req);
      return;
    }
    // The closure only where the log fields are carried (a logger that writes nothing has none to carry).
    if (contexts.carriesLogFields) contexts.run(context, () => serve(req, res, context));
    else serve(req, res, context);
  };
}

function httpProtocolOf(req: NodeRequest): RequestProtocol {
  return req.httpVersionMajor === 2 ? 'h2' : 'http1';
}

/** The table's 405, in the server's own shape, naming the methods the path has. */
function methodNotAllowed(allow: string[]): RestReply {
  return { status: 405, headers: { allow: allow.join(', ') }, body: { statusCode: 405, message: 'Method Not Allowed', error: 'Method Not Allowed' } };
}

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
