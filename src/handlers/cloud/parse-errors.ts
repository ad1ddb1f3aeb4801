import { toBinary } from '@bufbuild/protobuf';
import { wrapUniversalHandler } from '../../server/universal-handler.js';
import { Code, type ConnectError } from '@connectrpc/connect';
import type { UniversalHandler, UniversalServerResponse } from '@connectrpc/connect/protocol';
import { ServiceErrorSchema } from '../../../generated/proto/cloud/common/v1/error_pb.js';
import { AppError } from '../../errors.js';
import { apiServiceNameOf, serviceErrorOf, toConnectError } from './errors.js';

const PARSE_FAILURE = /^parse binary: /;

/**
 * Errors raised before any interceptor runs (an unparsable message, a `grpc-timeout` that does not
 * parse), shaped as the interceptors shape theirs: connect-es reports a request body that is not
 * valid protobuf binary as INTERNAL ("parse binary: …"), which is the client's fault, so it becomes
 * INVALID_ARGUMENT with a bad_request violation; every error gets the ServiceError detail and the
 * x-request-id trailer. Both gRPC paths call it (the native fast path and connect-node's, through
 * src/server/rpc-early-errors.ts), so a client sees one answer whichever path served it.
 */
export function shapeEarlyError(error: ConnectError, origin: { service: string; requestId: string }): ConnectError {
  const parseFailure = error.code === Code.Internal && PARSE_FAILURE.test(error.rawMessage);
  return toConnectError(parseFailure ? badRequest(error.rawMessage) : error, origin);
}

/**
 * The Connect protocol's JSON error for a body that is not valid protobuf binary: connect-node
 * answers it as a 500 `internal`; this answers 400 `invalid_argument` with the ServiceError detail,
 * as `shapeEarlyError` shapes it for gRPC.
 */
export function invalidArgumentOnParseFailure(handler: UniversalHandler): UniversalHandler {
  const wrapped = async (req: Parameters<UniversalHandler>[0]): Promise<UniversalServerResponse> => {
    const res = await handler(req);
    const service = apiServiceNameOf(handler.service);
    const requestId = req.header.get('x-request-id') ?? '';
    if (res.status === 500 && res.body && /^application\/json/.test(res.header?.get('content-type') ?? '')) {
      const chunks: Uint8Array[] = [];
      for await (const chunk of res.body) chunks.push(chunk);
      const text = Buffer.concat(chunks).toString('utf8');
      let parsed: { code?: string; message?: string } | undefined;
      try {
        parsed = JSON.parse(text) as { code?: string; message?: string };
      } catch {
        parsed = undefined;
      }
      if (parsed?.code === 'internal' && PARSE_FAILURE.test(parsed.message ?? '')) {
        const error = badRequest(parsed.message ?? '');
        const detail = serviceErrorOf(error, { service, requestId });
        const body = JSON.stringify({
          code: 'invalid_argument',
          message: error.message,
          details: [{ type: ServiceErrorSchema.typeName, value: Buffer.from(toBinary(ServiceErrorSchema, detail)).toString('base64').replace(/=+$/, '') }],
        });
        return { ...res, status: 400, body: single(Buffer.from(body)) };
      }
      return { ...res, body: single(Buffer.from(text)) };
    }
    return res;
  };
  return wrapUniversalHandler(handler, wrapped);
}

function badRequest(parseMessage: string): AppError {
  const reason = parseMessage.replace(PARSE_FAILURE, '');
  return new AppError('invalid_argument', `the request message is not valid protobuf: ${reason}`, {
    violations: [{ field: '', message: `not valid protobuf: ${reason}` }],
  });
}

async function* single(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}
