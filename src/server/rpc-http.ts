import { connectNodeAdapter } from '@connectrpc/connect-node';
import { createContextValues } from '@connectrpc/connect';
import { cloudJsonRegistry } from '../handlers/cloud/json-registry.js';
import type { NodeRequest, NodeResponse } from '../http/reply.js';
import { headerLinesKey, headerLinesOf } from './header-lines.js';
import { grpcCodeName, rpcOutcomeInterceptor, rpcOutcomeKey, rpcProtocolOf, type RpcOutcome } from './metrics.js';
import type { Route } from './route-table.js';
import { rpcPathsOf, rpcRoutes, type RpcService } from './rpc-routes.js';

/** gRPC, gRPC-Web and Connect calls all use `/<package>.<Service>/<Method>`; no REST path has a dot there. */
const RPC_PATH = /^\/[A-Za-z_][\w]*(\.[\w]+)+\/[A-Za-z_]\w*$/;

/**
 * Every RPC service over HTTP (Connect, gRPC-Web, and gRPC through Node's HTTP/2 compatibility API)
 * as one route of the table: connect-node answers, bounded by `maxMessageBytes` both ways (after
 * decompression: connect-node inflates with zlib's maxOutputLength = readMaxBytes; Connect unary
 * bodies with a larger Content-Length and envelopes announcing more are refused before they are
 * buffered). Counted by the RPC's name (a known one, never a path a client made up) and gRPC code.
 */
export function rpcRoute(services: RpcService[], maxMessageBytes: number): Route {
  // Request paths of every RPC served: the metric's operation label.
  const rpcPaths = rpcPathsOf(services);
  const outcomes = new WeakMap<object, RpcOutcome>();
  const adapter = connectNodeAdapter({
    contextValues: (req) => {
      const values = createContextValues();
      values.set(headerLinesKey, headerLinesOf(req.rawHeaders));
      const outcome = outcomes.get(req);
      if (outcome) values.set(rpcOutcomeKey, outcome);
      return values;
    },
    readMaxBytes: maxMessageBytes,
    writeMaxBytes: maxMessageBytes,
    jsonOptions: { registry: cloudJsonRegistry },
    routes: rpcRoutes(services, [rpcOutcomeInterceptor], maxMessageBytes),
  });
  return {
    pattern: RPC_PATH,
    handle(req: NodeRequest, res: NodeResponse, requestId: string, path: string) {
      // RPC interceptors read the request id from the request: hand them the one this response carries.
      req.headers['x-request-id'] = requestId;
      outcomes.set(req, {});
      adapter(req, res);
      return path;
    },
    metrics: {
      protocol: (req) => rpcProtocolOf(req.headers['content-type']),
      operation: (_req, path) => (rpcPaths.has(path) ? path.slice(1) : 'unmatched'),
      // Errors raised before the interceptors (an unknown method, an unreadable request) leave no outcome.
      code: (req, res) => {
        const status = res.getHeader('grpc-status');
        return outcomes.get(req)?.code ?? (typeof status === 'string' ? grpcCodeName(Number(status)) : `HTTP_${res.statusCode}`);
      },
    },
  };
}
