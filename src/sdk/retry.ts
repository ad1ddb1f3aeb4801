/**
 * Retries and idempotency keys, as the Nebius SDKs do them (nebius/gosdk conn/retries.go,
 * conn/idempotency.go, conn/inner_timeout.go and sdk.go's defaults; nebius/pysdk aio/request.py,
 * the same defaults: 60 s, 3 attempts, 60 s / 3 per attempt; aio/idempotency.py, a UUID4
 * `x-idempotency-key` that never replaces one the caller set):
 * the server's answer decides whether a call is retried, and every call carries one
 * `X-Idempotency-Key` across all its attempts, so a retry after a lost answer never runs twice.
 */
import { Code, ConnectError, type Interceptor, type UnaryRequest } from '@connectrpc/connect';
import { ServiceErrorSchema, ServiceError_RetryType } from '../../generated/proto/cloud/common/v1/error_pb.js';
import { OperationSchema } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import { OperationService } from '../../generated/proto/cloud/common/v1/operation_service_pb.js';

/** The header the server deduplicates mutating calls by (gosdk conn.IdempotencyKeyHeader). */
export const IDEMPOTENCY_KEY_HEADER = 'x-idempotency-key';

export interface RetryOptions {
  /** Attempts in all, the first included (gosdk DefaultRetries = 3, go-grpc-middleware's WithMax). */
  maxAttempts?: number;
  /** The whole call, every attempt and pause included (gosdk DefaultTimeout = 1 min). */
  deadlineMs?: number;
  /**
   * One attempt (gosdk DefaultPerRetry = DefaultTimeout / DefaultRetries = 20 s, whatever the number
   * of attempts: raising maxAttempts does not shorten it); an attempt that runs out is retried.
   */
  attemptTimeoutMs?: number;
  /** The pause before the first retry; it doubles per retry up to maxBackoffMs. */
  initialBackoffMs?: number;
  /**
   * The pause before the first retry of a call refused with `operation_conflict` (another operation
   * of the resource still runs): long enough for a typical operation to finish, doubling per retry
   * up to maxBackoffMs, so the default 3 attempts wait out ~3 s of it instead of ~150 ms.
   */
  conflictBackoffMs?: number;
  maxBackoffMs?: number;
  /** ± this fraction of each pause, so clients that failed together do not retry together. */
  jitter?: number;
}

const DEFAULTS: Required<RetryOptions> = {
  maxAttempts: 3,
  deadlineMs: 60_000,
  attemptTimeoutMs: 20_000,
  initialBackoffMs: 50,
  conflictBackoffMs: 1000,
  maxBackoffMs: 10_000,
  jitter: 0.1,
};

/** gosdk conn.DefaultRetriableCodes: the quota of the moment is reached, or the service is unavailable. */
const RETRIABLE_CODES: ReadonlySet<Code> = new Set([Code.ResourceExhausted, Code.Unavailable]);

/**
 * Whether a failed call may be retried as it is (gosdk conn.IsRetriableNebiusError): a ServiceError
 * that says CALL → yes; NOTHING or UNIT_OF_WORK → no, whatever the code (a quota failure is
 * RESOURCE_EXHAUSTED but NOTHING); otherwise UNAVAILABLE and RESOURCE_EXHAUSTED, an HTTP 52x a proxy
 * answered, and errors that never reached the server (connection refused or reset).
 */
export function isRetriable(error: unknown): boolean {
  if (!(error instanceof ConnectError)) return isNetworkError(error);
  for (const detail of error.findDetails(ServiceErrorSchema)) {
    if (detail.retryType === ServiceError_RetryType.CALL) return true;
    if (detail.retryType === ServiceError_RetryType.NOTHING || detail.retryType === ServiceError_RetryType.UNIT_OF_WORK) return false;
  }
  if (RETRIABLE_CODES.has(error.code)) return true;
  if (error.code === Code.Unknown && /HTTP (status )?52\d/.test(error.rawMessage)) return true;
  return isNetworkError(error.cause);
}

function isNetworkError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'ERR_HTTP2_STREAM_ERROR'].includes(code);
}

/**
 * The pause before retry number `retry` (1 for the first retry): exponential with jitter
 * (go-grpc-middleware BackoffExponentialWithJitter), capped.
 */
export function backoffMs(retry: number, options: Pick<Required<RetryOptions>, 'initialBackoffMs' | 'maxBackoffMs' | 'jitter'>, random = Math.random): number {
  const exponential = Math.min(options.maxBackoffMs, options.initialBackoffMs * 2 ** (retry - 1));
  return Math.max(0, exponential * (1 + options.jitter * (2 * random() - 1)));
}

/**
 * Whether a method starts an operation, which is how the server tells mutating methods (they return
 * an Operation); OperationService's own methods (Get, Wait, Cancel) start none.
 */
export function isMutating(method: { output: { typeName: string }; parent?: { typeName: string } }): boolean {
  return method.output.typeName === OperationSchema.typeName && method.parent?.typeName !== OperationService.typeName;
}

/**
 * Gives every unary call a fresh random `X-Idempotency-Key` unless the caller set one (gosdk
 * IdempotencyKeyInterceptor / EnsureIdempotencyKeyInOutgoingContext, pysdk ensure_key_in_metadata:
 * every call, an empty key counting as none). The server honours it on every mutating method —
 * those that answer an Operation and those that do not (AuthPublicKeyService.Generate) — and reads
 * ignore it, so the SDK need not know which is which. Placed before the retry interceptor, so all
 * attempts of one call send the same key.
 */
export function createIdempotencyInterceptor(): Interceptor {
  return (next) => (req) => {
    if (!req.stream && !req.header.get(IDEMPOTENCY_KEY_HEADER)) req.header.set(IDEMPOTENCY_KEY_HEADER, crypto.randomUUID());
    return next(req);
  };
}

/**
 * Retries unary calls the server says may be retried (isRetriable), with exponential backoff and
 * jitter, within an overall deadline and a per-attempt timeout. Each attempt tells the server how
 * long it has (`grpc-timeout` / `connect-timeout-ms`: the smaller of the attempt's timeout and what
 * is left of the deadline, or of the caller's own `timeoutMs`). An attempt that timed out is
 * retried while the deadline allows (go-grpc-middleware WithPerRetryTimeout); the caller's abort
 * is never retried. Interceptors after this one in the chain run once per attempt.
 */
export function createRetryInterceptor(options: RetryOptions = {}): Interceptor {
  const settings = { ...DEFAULTS, ...withoutUndefined(options) };
  return (next) => async (req) => {
    if (req.stream) return next(req);
    const timeoutHeader = timeoutHeaderOf(req);
    const callerMs = parseTimeout(req.header.get(timeoutHeader));
    const deadline = Date.now() + Math.min(settings.deadlineMs, callerMs ?? Infinity);
    for (let attempt = 1; ; attempt++) {
      const remaining = deadline - Date.now();
      const attemptMs = Math.max(1, Math.min(settings.attemptTimeoutMs, remaining));
      const header = new Headers(req.header);
      header.set(timeoutHeader, formatTimeout(timeoutHeader, attemptMs));
      const attemptSignal = AbortSignal.timeout(attemptMs);
      const attemptReq: UnaryRequest = { ...req, header, signal: AbortSignal.any([req.signal, attemptSignal]) };
      try {
        return await next(attemptReq);
      } catch (error) {
        if (req.signal.aborted) throw error;
        const timedOut = attemptSignal.aborted || (error instanceof ConnectError && error.code === Code.DeadlineExceeded && remaining > attemptMs);
        // Our own timer ended the attempt: that is a deadline, whatever the transport made of the abort.
        const failure = attemptSignal.aborted
          ? new ConnectError(`deadline exceeded after ${attempt} attempt(s)`, Code.DeadlineExceeded, undefined, undefined, error)
          : error;
        if (attempt >= settings.maxAttempts || !(timedOut || isRetriable(error))) throw failure;
        const pause = Math.max(backoffMs(attempt, settings), retryAfterMs(error), conflictBackoffMs(error, attempt, settings));
        if (Date.now() + pause >= deadline) throw failure;
        await sleep(pause, req.signal);
      }
    }
  };
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as Partial<T>;
}

/** gRPC (and gRPC-Web) carry the deadline in `grpc-timeout`, the Connect protocol in `connect-timeout-ms`. */
function timeoutHeaderOf(req: UnaryRequest): string {
  return (req.header.get('content-type') ?? '').startsWith('application/grpc') ? 'grpc-timeout' : 'connect-timeout-ms';
}

function formatTimeout(header: string, ms: number): string {
  return header === 'grpc-timeout' ? `${Math.ceil(ms)}m` : String(Math.ceil(ms));
}

const GRPC_TIMEOUT_UNITS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

function parseTimeout(value: string | null): number | undefined {
  if (value === null) return undefined;
  const match = /^(\d{1,10})([HMSmun]?)$/.exec(value);
  if (!match) return undefined;
  return Number(match[1]) * (match[2] ? (GRPC_TIMEOUT_UNITS[match[2]] ?? 1) : 1);
}

/**
 * The pause before retrying a call refused because another operation of the resource still runs
 * (ABORTED, `operation_conflict`, retry_type CALL): such a refusal lasts as long as that operation,
 * so the ordinary 50 ms backoff spends every attempt within a fraction of it.
 */
function conflictBackoffMs(error: unknown, retry: number, settings: Required<RetryOptions>): number {
  if (!(error instanceof ConnectError) || !error.findDetails(ServiceErrorSchema).some((detail) => detail.details.case === 'operationConflict')) return 0;
  return backoffMs(retry, { ...settings, initialBackoffMs: settings.conflictBackoffMs });
}

/** The server's `retry-after` (seconds) on a throttled call: no point retrying sooner. */
function retryAfterMs(error: unknown): number {
  const seconds = error instanceof ConnectError ? Number(error.metadata.get('retry-after')) : NaN;
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
