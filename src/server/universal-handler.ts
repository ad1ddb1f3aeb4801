import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from '@connectrpc/connect/protocol';

/**
 * A connect-node handler with `serve` in place of its own function and the same routing metadata
 * (path, service, method, protocols, content types), so routers and adapters treat it as the original.
 * The wrappers around every RPC (grpc-message spelling, unsafe JSON numbers, parse errors) are built on it.
 */
export function wrapUniversalHandler(handler: UniversalHandler, serve: (req: UniversalServerRequest) => Promise<UniversalServerResponse>): UniversalHandler {
  return Object.assign(serve, {
    protocolNames: handler.protocolNames,
    service: handler.service,
    method: handler.method,
    requestPath: handler.requestPath,
    allowedMethods: handler.allowedMethods,
    supportedContentType: handler.supportedContentType,
  });
}
