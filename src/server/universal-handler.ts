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

/**
 * Applies `edit` to a response's trailer now and again once its body has ended: connect sets the
 * status trailer while the body is read (an error may come mid-stream). `edit` must be idempotent.
 */
export function editTrailer(res: UniversalServerResponse, edit: (trailer: Headers) => void): UniversalServerResponse {
  const trailer = res.trailer;
  if (!trailer) return res;
  edit(trailer);
  return res.body ? { ...res, body: thenEdit(res.body, trailer, edit) } : res;
}

async function* thenEdit(body: AsyncIterable<Uint8Array>, trailer: Headers, edit: (trailer: Headers) => void): AsyncIterable<Uint8Array> {
  yield* body;
  edit(trailer);
}
