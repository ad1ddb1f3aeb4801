/**
 * The one domain error type. Services throw it with a code from a closed set; each API family
 * renders it in its own wire shape through one table (REST status, gRPC code), so a rule never
 * decides how an error looks on the wire.
 */
export type ErrorCode =
  | 'invalid_argument'
  | 'unauthenticated'
  | 'permission_denied'
  | 'not_found'
  | 'already_exists'
  | 'failed_precondition'
  | 'aborted'
  | 'resource_exhausted'
  /** A request body over the API's size limit (413). */
  | 'content_too_large'
  | 'unimplemented'
  | 'internal';

/** One invalid input: `field` is a dotted path into the request. */
export interface Violation {
  field: string;
  message: string;
}

export interface AppErrorOptions {
  violations?: Violation[];
  /** Seconds the client should wait before retrying (429 `Retry-After`). */
  retryAfterSeconds?: number;
  /** The id of the resource the error is about, for error details. */
  resourceId?: string;
  /** Structured data for error kinds that need more than a code (conflicts, quotas); renderers may ignore it. */
  detail?: ErrorDetail;
  cause?: unknown;
}

/**
 * What a client needs to react to some errors beyond their code: which operation holds a resource,
 * which version is stored, which quota is full. Kept protocol-neutral; the cloud API renders it as
 * a ServiceError detail.
 */
export type ErrorDetail =
  | { kind: 'operation_conflict'; conflictingOperationId: string }
  | { kind: 'resource_conflict' }
  | { kind: 'bad_resource_state' }
  | { kind: 'quota_failure'; quota: string; limit: number; requested: number }
  | { kind: 'too_many_requests'; violation: string };

export class AppError extends Error {
  override name = 'AppError';
  readonly violations: Violation[];
  readonly retryAfterSeconds: number | undefined;
  readonly resourceId: string | undefined;
  readonly detail: ErrorDetail | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: AppErrorOptions = {},
  ) {
    super(message, { cause: options.cause });
    this.violations = options.violations ?? [];
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.resourceId = options.resourceId;
    this.detail = options.detail;
  }
}

/** HTTP status of each code, shared by every REST API. */
export const HTTP_STATUS: Record<ErrorCode, number> = {
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  already_exists: 409,
  failed_precondition: 409,
  aborted: 409,
  resource_exhausted: 429,
  content_too_large: 413,
  unimplemented: 501,
  internal: 500,
};

/** Turns anything thrown into an AppError; unknown failures become `internal` with the cause kept for logs. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  // PostgreSQL refuses text it cannot store (a NUL character, SQLSTATE 22021 / 22P05): the input's
  // fault, not the server's. Engines reject it with the field named first; this is the safety net.
  const sqlState = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (sqlState === '22021' || sqlState === '22P05') {
    return new AppError('invalid_argument', 'text must not contain NUL characters', { violations: [{ field: '', message: 'must not contain NUL characters' }], cause: error });
  }
  return new AppError('internal', 'Internal Server Error', { cause: error });
}
