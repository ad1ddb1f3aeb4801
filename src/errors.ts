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
  | 'internal'
  | 'unavailable';

/** One invalid input: `field` is a dotted path into the request. */
export interface Violation {
  field: string;
  message: string;
}

export interface AppErrorOptions {
  violations?: Violation[];
  /** Seconds the client should wait before retrying (429 and 503 `Retry-After`). */
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
  unavailable: 503,
};

/**
 * The one rule for what a client reads of an error (STYLE.md rule 4), used by every API family's
 * renderer (users, problem details, GraphQL, cloud RPCs): a failure whose message may carry its cause
 * (SQL, stack, host names) — `internal`, and `unavailable`, which `toAppError` makes from driver
 * errors — is a fixed sentence, the cause going to the log under the request id. Every other code,
 * `unimplemented` included (always raised on purpose, its message says where to go instead), keeps
 * the message its service wrote for the client.
 */
export function publicMessage(error: AppError): string {
  return SERVER_FAULT_MESSAGES[error.code] ?? error.message;
}

const SERVER_FAULT_MESSAGES: Partial<Record<ErrorCode, string>> = {
  internal: 'The server failed to answer; quote the request id (x-request-id) to report it.',
  unavailable: 'The service is temporarily unavailable; retry later.',
};

/** What a client is told to wait when the database is unreachable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/** What a client is told to wait when the store's disk is full: an operator has to free space first. */
export const STORAGE_FULL_RETRY_AFTER_SECONDS = 30;

/** Turns anything thrown into an AppError; unknown failures become `internal` with the cause kept for logs. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  // PostgreSQL refuses text it cannot store (a NUL character, SQLSTATE 22021 / 22P05): the input's
  // fault, not the server's. Engines reject it with the field named first; this is the safety net.
  const sqlState = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (sqlState === '22021' || sqlState === '22P05') {
    return new AppError('invalid_argument', 'text must not contain NUL characters', {
      violations: [{ field: '', message: 'must not contain NUL characters' }],
      cause: error,
    });
  }
  if (isDatabaseUnavailable(error)) {
    return new AppError('unavailable', 'The service is temporarily unavailable; retry later.', {
      retryAfterSeconds: isStorageFull(error) ? STORAGE_FULL_RETRY_AFTER_SECONDS : UNAVAILABLE_RETRY_AFTER_SECONDS,
      cause: error,
    });
  }
  return new AppError('internal', 'Internal Server Error', { cause: error });
}

/** Socket errors of a connection that could not be made or was cut. */
const CONNECTION_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs that say "the server is going away or not accepting work", not "your query is wrong":
 * class 08 (connection exception), 57P01-57P03 (admin/crash shutdown, cannot connect now), 57014
 * (statement_timeout or cancel), 53300 (too many connections).
 */
const UNAVAILABLE_SQLSTATES = /^(08...|57P0[123]|57014|53300)$/;

/** Messages of pg and knex for a connection that died, never came (pg's connect timeout is a bare "timeout expired"), or never answered. */
const UNAVAILABLE_MESSAGES =
  /^timeout expired$|Connection terminated|Connection ended unexpectedly|Query read timeout|Timeout acquiring a connection|Client has encountered a connection error|Client was closed and is not queryable|terminating connection/i;

/**
 * SQLSTATEs of a store that cannot write: class 53's disk_full (53100), insufficient_resources
 * (53000) and out_of_memory (53200), and io_error (58030). PostgreSQL and PGlite alike raise 53100
 * when a file cannot be extended or written for lack of space.
 */
const STORAGE_SQLSTATES = /^(53000|53100|53200|58030)$/;

/** File errors of the filesystem under the store (PGlite's DATA_DIR, the data-dir lock, node:fs). */
const STORAGE_ERRNOS = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO']);

/** The same in the words of PostgreSQL, PGlite's file system layer and libc. */
const STORAGE_MESSAGES = /No space left on device|Disk quota exceeded|Read-only file system|could not extend file|could not write to file/i;

/**
 * Whether an error means the store cannot write: its disk is full (or read-only, or failing). A
 * request that hit it may succeed once space is freed, so it is 503 / UNAVAILABLE like an outage,
 * never 500; `/readyz` reports it. Looks through `cause` chains and AggregateErrors.
 */
export function isStorageFull(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false;
  const { code, message, name, cause, errors } = error as { code?: unknown; message?: unknown; name?: unknown; cause?: unknown; errors?: unknown };
  if (typeof code === 'string' && (STORAGE_ERRNOS.has(code) || STORAGE_SQLSTATES.test(code))) return true;
  // Emscripten's file layer under PGlite throws ErrnoError objects, whose message is often empty.
  if (name === 'ErrnoError') return true;
  if (typeof message === 'string' && STORAGE_MESSAGES.test(message)) return true;
  if (Array.isArray(errors) && errors.some((inner) => isStorageFull(inner, depth + 1))) return true;
  return cause !== undefined && isStorageFull(cause, depth + 1);
}

/**
 * Whether an error means the database cannot be reached or cannot write right now (refused, reset,
 * timed out, restarting, its disk full), so the request may succeed if retried: such failures are
 * 503 / UNAVAILABLE, not 500 / INTERNAL. Looks through `cause` chains and AggregateErrors (a
 * refused dual-stack connect).
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false;
  if (depth === 0 && isStorageFull(error)) return true;
  const { code, message, name, cause, errors } = error as { code?: unknown; message?: unknown; name?: unknown; cause?: unknown; errors?: unknown };
  if (typeof code === 'string' && (CONNECTION_ERRNOS.has(code) || UNAVAILABLE_SQLSTATES.test(code))) return true;
  if (name === 'KnexTimeoutError') return true;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message)) return true;
  if (Array.isArray(errors) && errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true;
  return cause !== undefined && isDatabaseUnavailable(cause, depth + 1);
}
