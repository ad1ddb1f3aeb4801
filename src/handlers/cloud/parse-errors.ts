import { create, toBinary } from '@bufbuild/protobuf';
import { wrapUniversalHandler } from '../../server/universal-handler.js';
import { anyPack } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import type { UniversalHandler, UniversalServerResponse } from '@connectrpc/connect/protocol';
import { ServiceErrorSchema } from '../../../generated/proto/cloud/common/v1/error_pb.js';
import { StatusSchema } from '../../../generated/proto/google/rpc/status_pb.js';
import { AppError } from '../../errors.js';
import { apiServiceNameOf, serviceErrorOf, statusDetailsHeader } from './errors.js';
import { encodeGrpcMessage } from '../../server/grpc-message.js';

const PARSE_FAILURE = /^parse binary: /;

/**
 * connect-es reports a request body that is not valid protobuf binary as INTERNAL ("parse binary:
 * …"), before any interceptor runs. That is the client's fault, so this wrapper turns it into
 * INVALID_ARGUMENT with a bad_request detail, for the gRPC and Connect protocols (gRPC-Web keeps
 * its trailers in the body and is left as connect answers it).
 */
export function invalidArgumentOnParseFailure(handler: UniversalHandler): UniversalHandler {
  const wrapped = async (req: Parameters<UniversalHandler>[0]): Promise<UniversalServerResponse> => {
    const res = await handler(req);
    const service = apiServiceNameOf(handler.service);
    const requestId = req.header.get('x-request-id') ?? '';
    const trailer = res.trailer;
    if (trailer?.get('grpc-status') === String(Code.Internal)) {
      const message = decodeURIComponent(trailer.get('grpc-message') ?? '');
      if (PARSE_FAILURE.test(message)) {
        const error = badRequest(message);
        const detail = serviceErrorOf(error, { service, requestId });
        trailer.set('grpc-status', String(Code.InvalidArgument));
        trailer.set('grpc-message', encodeGrpcMessage(error.message));
        trailer.set(
          'grpc-status-details-bin',
          statusDetailsHeader(create(StatusSchema, { code: Code.InvalidArgument, message: error.message, details: [anyPack(ServiceErrorSchema, detail)] })),
        );
      }
      return res;
    }
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
