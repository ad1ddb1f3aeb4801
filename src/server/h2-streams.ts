import http2 from 'node:http2';
import type { NodeRequest, NodeResponse } from '../http/reply.js';
import { grpcCodeName } from './metrics.js';
import type { GrpcUnaryHandler } from './grpc-fast-path/unary-handler.js';
import { formatTraceparent } from './trace-context.js';
import type { RequestContexts } from './request-context.js';

export interface StreamHandOffOptions {
  /** Native unary gRPC's fast path (src/server/grpc-unary.ts). */
  grpcUnary: GrpcUnaryHandler;
  /** Request paths of every RPC served: the metric's operation label. */
  rpcPaths: ReadonlySet<string>;
  contexts: RequestContexts;
  /** Every other stream, as a request/response pair of Node's compatibility API. */
  dispatch(req: NodeRequest, res: NodeResponse): void;
}

/**
 * The HTTP/2 stream hand-off: native unary gRPC takes the fast path straight on the stream; every
 * other stream goes through Node's compatibility API (req/res) of a second, never-listening server to
 * the same dispatcher as HTTP/1.1.
 */
export function handOffStreams(h2: http2.Http2Server, options: StreamHandOffOptions): void {
  const { grpcUnary, rpcPaths, contexts } = options;
  const compat = http2.createServer({}, options.dispatch);
  h2.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]) => {
    // Refused by the guard, or reset by the client before it was dispatched (rapid reset): nothing to serve.
    if (stream.closed) return;
    if (!grpcUnary.accepts(headers)) {
      compat.emit('stream', stream, headers, flags, rawHeaders);
      return;
    }
    const context = contexts.openStream(headers);
    const path = headers[':path'] ?? '';
    const serveCall = () =>
      grpcUnary.handle(
        stream,
        headers,
        context.requestId,
        (code) => {
          contexts.log(context, 'POST', path, 200, () => contexts.streamClientAddress(stream, headers), code);
          if (contexts.measuring) contexts.record(context, 'grpc', rpcPaths.has(path) ? path.slice(1) : 'unmatched', grpcCodeName(code));
        },
        { traceparent: formatTraceparent(context.trace) },
        rawHeaders,
      );
    // As for HTTP dispatch: no AsyncLocalStorage (and so none of Node 20's promise hooks) when the logger writes nothing.
    contexts.run(context, serveCall);
  });
}
