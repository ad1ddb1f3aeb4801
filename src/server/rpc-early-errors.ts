import { ConnectError, type Code } from '@connectrpc/connect';
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from '@connectrpc/connect/protocol';
import { setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import { editTrailer, wrapUniversalHandler } from './universal-handler.js';

/** The gRPC protocol's content types (gRPC-Web carries its trailers in the body, Connect answers JSON). */
const GRPC = /^application\/grpc(\+|;|$)/i;

/**
 * Errors connect-node raises on the gRPC protocol before a service's interceptors run (a request
 * message that does not parse, a `grpc-timeout` that does not) reach the client as connect wrote
 * them: no ServiceError detail, no x-request-id trailer. This shapes them with the service's own
 * `shapeError`, the function the native fast path applies to the same errors
 * (src/server/grpc-fast-path/unary-handler.ts), so both paths answer alike. An error that already
 * has status details was shaped by the interceptors and is left alone.
 */
export function shapeEarlyErrors(handler: UniversalHandler, shapeError: (error: ConnectError, requestId: string) => ConnectError): UniversalHandler {
  const wrapped = async (req: UniversalServerRequest): Promise<UniversalServerResponse> => {
    const res = await handler(req);
    if (!GRPC.test(req.header.get('content-type') ?? '')) return res;
    const requestId = req.header.get('x-request-id') ?? '';
    return editTrailer(res, (trailer) => shapeTrailer(trailer, shapeError, requestId));
  };
  return wrapUniversalHandler(handler, wrapped);
}

/** Shapes the trailer's error, unless it has none or was shaped already (status details): idempotent. */
function shapeTrailer(trailer: Headers, shapeError: (error: ConnectError, requestId: string) => ConnectError, requestId: string): void {
  const status = trailer.get('grpc-status');
  if (status === null || status === '0' || trailer.has('grpc-status-details-bin')) return;
  let message = trailer.get('grpc-message') ?? '';
  try {
    message = decodeURIComponent(message);
  } catch {
    // left as sent
  }
  setTrailerStatus(trailer, shapeError(new ConnectError(message, Number(status) as Code), requestId));
}
