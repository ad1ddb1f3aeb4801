/**
 * Reading the errors of the cloud API: every failed call carries a cloud.common.v1.ServiceError
 * (code, structured details, retry_type) and the request id the server logged it under
 * (docs/cloud-api.md, "Read error details"); a failed Operation carries the same in its status.
 */
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { ServiceErrorSchema, ServiceError_RetryType, type ServiceError } from '../../generated/proto/cloud/common/v1/error_pb.js';
import type { Operation } from '../../generated/proto/cloud/common/v1/operation_pb.js';

/** The ServiceError details of a failed call (usually one). */
export function serviceErrorsOf(error: ConnectError): ServiceError[] {
  return error.findDetails(ServiceErrorSchema);
}

/**
 * The request id the server answered a failed call with (`x-request-id`), or '' when it sent none.
 * A gRPC or gRPC-Web answer carries it twice, in the response header (every response has it) and
 * again in the trailer (grpc-js and grpcurl users read a failed call's trailers); connect-es puts
 * both into `error.metadata`, whose `get` joins them as "X, X". The first value is the id (gosdk
 * serviceerror.FromRPCError: `requestIDs[0]`; a server-made id never holds a comma or a space).
 */
export function requestIdOf(error: ConnectError): string {
  const joined = error.metadata.get('x-request-id') ?? '';
  return joined.split(',', 1)[0]?.trim() ?? '';
}

/**
 * A finished Operation whose status is not OK, thrown by `wait`. It is a ConnectError with the
 * operation's status code and message, and its ServiceError details decoded, so code that handles
 * a failed call handles a failed operation the same way (gosdk operations.Error).
 */
export class OperationError extends ConnectError {
  /** ConnectError's own check answers by name ("ConnectError", kept so this still passes as one); this is the plain prototype check. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return Function.prototype[Symbol.hasInstance].call(this, value);
  }

  constructor(readonly operation: Operation) {
    const status = operation.status;
    const details = (status?.details ?? []).flatMap((detail) => {
      const value = anyUnpack(detail, ServiceErrorSchema);
      return value ? [{ desc: ServiceErrorSchema, value }] : [];
    });
    super(`operation ${operation.id} failed: ${status?.message ?? ''}`, (status?.code ?? Code.Unknown) as Code, undefined, details);
  }
}

/** One line per ServiceError detail: "Code (retry: CALL): {details}", for logs and the command line. */
export function describeServiceErrors(error: ConnectError): string[] {
  return serviceErrorsOf(error).map((detail) => {
    const retry = ServiceError_RetryType[detail.retryType] ?? String(detail.retryType);
    const { case: kind, value } = detail.details;
    const body = kind === undefined ? '' : ` ${kind}: ${JSON.stringify(value, (key, field: unknown) => (key === '$typeName' ? undefined : field))}`;
    return `${detail.service}/${detail.code} (retry_type ${retry})${body}`;
  });
}
