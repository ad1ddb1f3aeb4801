import { create, getOption, hasOption, type DescService, type MessageInitShape } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { api_service_name } from '../../../generated/proto/cloud/annotations_pb.js';
import { ServiceError_RetryType as RetryType, ServiceErrorSchema, type ServiceError } from '../../../generated/proto/cloud/common/v1/error_pb.js';
import { StatusSchema, type Status } from '../../../generated/proto/google/rpc/status_pb.js';
import { AppError, publicMessage, toAppError, type ErrorCode } from '../../errors.js';

/** The one table from domain error codes to gRPC codes for the cloud API. */
const GRPC_CODE: Record<ErrorCode, Code> = {
  invalid_argument: Code.InvalidArgument,
  unauthenticated: Code.Unauthenticated,
  permission_denied: Code.PermissionDenied,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  failed_precondition: Code.FailedPrecondition,
  aborted: Code.Aborted,
  resource_exhausted: Code.ResourceExhausted,
  content_too_large: Code.ResourceExhausted,
  unimplemented: Code.Unimplemented,
  internal: Code.Internal,
  unavailable: Code.Unavailable,
};

/** Where an error happened: the service's `api_service_name` and the request (or operation) id. */
export interface ErrorOrigin {
  service: string;
  requestId: string;
}

/** The `api_service_name` of a service ("" when it has none). */
export function apiServiceNameOf(service: DescService): string {
  return hasOption(service, api_service_name) ? getOption(service, api_service_name) : '';
}

function pascal(code: string): string {
  return code.replace(/(^|_)([a-z])/g, (_, __, letter: string) => letter.toUpperCase());
}

/**
 * The ServiceError detail of a domain error (docs/cloud-api.md, "Read error details"): the detail kind follows the
 * code (and the error's structured detail), retry_type tells the client what a retry can achieve.
 */
export function serviceErrorOf(error: AppError, origin: ErrorOrigin): ServiceError {
  const init: MessageInitShape<typeof ServiceErrorSchema> = { service: origin.service, code: pascal(error.detail?.kind ?? error.code) };
  const resourceId = error.resourceId ?? '';
  switch (error.code) {
    case 'invalid_argument': {
      const violations = error.violations.length > 0 ? error.violations : [{ field: '', message: error.message }];
      init.details = { case: 'badRequest', value: { violations } };
      init.retryType = RetryType.NOTHING;
      break;
    }
    case 'not_found':
      init.details = { case: 'resourceNotFound', value: { resourceId } };
      init.retryType = RetryType.NOTHING;
      break;
    case 'already_exists':
      init.details = { case: 'resourceAlreadyExists', value: { resourceId, message: error.message } };
      init.retryType = RetryType.NOTHING;
      break;
    case 'permission_denied':
      init.details = { case: 'permissionDenied', value: { resourceId } };
      init.retryType = RetryType.NOTHING;
      break;
    case 'failed_precondition':
      init.details = { case: 'badResourceState', value: { resourceId, message: error.message } };
      init.retryType = RetryType.UNIT_OF_WORK;
      break;
    case 'aborted':
      if (error.detail?.kind === 'operation_conflict') {
        init.details = { case: 'operationConflict', value: { resourceId, conflictingOperationId: error.detail.conflictingOperationId } };
        init.retryType = RetryType.CALL;
      } else if (error.detail?.kind === 'resource_conflict') {
        init.details = { case: 'resourceConflict', value: { resourceId, message: error.message } };
        init.retryType = RetryType.UNIT_OF_WORK;
      } else {
        init.retryType = RetryType.CALL;
      }
      break;
    case 'resource_exhausted':
      if (error.detail?.kind === 'quota_failure') {
        const { quota, limit, requested } = error.detail;
        init.details = { case: 'quotaFailure', value: { violations: [{ quota, message: error.message, limit: String(limit), requested: String(requested) }] } };
        init.retryType = RetryType.NOTHING;
      } else {
        const violation = error.detail?.kind === 'too_many_requests' ? error.detail.violation : error.message;
        init.details = { case: 'tooManyRequests', value: { violation } };
        init.retryType = RetryType.CALL;
      }
      break;
    case 'internal':
    case 'unavailable':
      // Unavailable: the store could not be reached; the same call may succeed in a moment.
      init.details = { case: 'internalError', value: { requestId: origin.requestId } };
      init.retryType = RetryType.CALL;
      break;
    case 'unauthenticated':
    case 'unimplemented':
      init.retryType = RetryType.NOTHING;
      break;
  }
  return create(ServiceErrorSchema, init);
}

/**
 * Renders anything thrown by a cloud RPC as a ConnectError with a ServiceError detail, which
 * connect-node sends as `grpc-status-details-bin` (gRPC, gRPC-Web) or `details` (Connect).
 * Unknown errors become INTERNAL with a generic message; `onInternal` gets the cause for the log.
 */
export function toConnectError(error: unknown, origin: ErrorOrigin, onInternal?: (cause: unknown) => void): ConnectError {
  if (error instanceof ConnectError) {
    if (error.details.length > 0) return error;
    const code = (Object.entries(GRPC_CODE).find(([, value]) => value === error.code)?.[0] ?? 'internal') as ErrorCode;
    if (code === 'internal') onInternal?.(error);
    const detail = serviceErrorOf(new AppError(code, error.rawMessage), origin);
    if (origin.requestId) error.metadata.set('x-request-id', origin.requestId);
    return new ConnectError(publicMessage(new AppError(code, error.rawMessage)), error.code, error.metadata, [{ desc: ServiceErrorSchema, value: detail }]);
  }
  const appError = toAppError(error);
  if (appError.code === 'internal') onInternal?.(appError.cause ?? appError);
  // Also in trailers: some gRPC clients surface only the trailers of a failed call.
  const metadata = new Headers(origin.requestId ? { 'x-request-id': origin.requestId } : {});
  if (appError.retryAfterSeconds !== undefined) metadata.set('retry-after', String(appError.retryAfterSeconds));
  return new ConnectError(publicMessage(appError), GRPC_CODE[appError.code], metadata, [{ desc: ServiceErrorSchema, value: serviceErrorOf(appError, origin) }]);
}

/** The google.rpc.Status of a failed operation (its details hold the ServiceError). */
export function toRpcStatus(error: unknown, origin: ErrorOrigin): Status {
  const appError = toAppError(error);
  return create(StatusSchema, {
    code: GRPC_CODE[appError.code],
    message: publicMessage(appError),
    details: [anyPack(ServiceErrorSchema, serviceErrorOf(appError, origin))],
  });
}

/**
 * The google.rpc.Status of a cancelled operation: CANCELLED, with a ServiceError whose
 * `operation_aborted` names the operation and its resource (nothing took its place).
 */
export function cancelledRpcStatus(origin: ErrorOrigin, target: { operationId: string; resourceId: string }): Status {
  const detail = create(ServiceErrorSchema, {
    service: origin.service,
    code: 'Cancelled',
    details: { case: 'operationAborted', value: { operationId: target.operationId, resourceId: target.resourceId } },
    retryType: RetryType.NOTHING,
  });
  return create(StatusSchema, {
    code: Code.Canceled,
    message: 'the operation was cancelled (OperationService.Cancel); its resource is as it was before',
    details: [anyPack(ServiceErrorSchema, detail)],
  });
}
