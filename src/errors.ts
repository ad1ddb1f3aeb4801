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
  cause?: unknown;
}

export class AppError extends Error {
  override name = 'AppError';
  readonly violations: Violation[];
  readonly retryAfterSeconds: number | undefined;
  readonly resourceId: string | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: AppErrorOptions = {},
  ) {
    super(message, { cause: options.cause });
    this.violations = options.violations ?? [];
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.resourceId = options.resourceId;
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
  internal: 500,
};

/** Turns anything thrown into an AppError; unknown failures become `internal` with the cause kept for logs. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  return new AppError('internal', 'Internal Server Error', { cause: error });
}
