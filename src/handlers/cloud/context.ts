import { ResetMaskParseError, resetMaskFromHeaderValues, type ResetMask } from '../../engines/reset-mask/index.js';
import type { OperationCall, PendingKey, RecordedHeaders } from '../../engines/operations/index.js';
import { createContextKey, type HandlerContext } from '@connectrpc/connect';
import { AppError } from '../../errors.js';
import type { Principal } from '../../auth/principal.js';
import { requestHeaderLines } from '../../server/header-lines.js';

/** The authenticated caller, set by the auth interceptor. */
export const principalKey = createContextKey<Principal | undefined>(undefined, { description: 'cloud API principal' });

/**
 * The endpoint (`<api_service_name>` of `<api_service_name>.<API_DOMAIN>`) the request came in on,
 * or undefined when API_DOMAIN is unset or the host is not under it (every service answers).
 */
export const endpointKey = createContextKey<string | undefined>(undefined, { description: 'cloud API endpoint' });

/** The caller of a handler; the auth interceptor guarantees one on every cloud RPC. */
export function principalOf(context: HandlerContext): Principal {
  const principal = context.values.get(principalKey);
  if (!principal) throw new AppError('unauthenticated', 'a bearer token is required');
  return principal;
}

/** The idempotency key of a mutating call, set by the idempotency interceptor (IdempotencyKeys.runAtomic). */
export const pendingKeyKey = createContextKey<PendingKey | undefined>(undefined, { description: 'cloud API idempotency key' });

/** Headers recorded on operations (lowercase name → values). */
function recordedHeaders(header: Headers): RecordedHeaders {
  const key = header.get('x-idempotency-key');
  return key === null ? {} : { 'x-idempotency-key': [key] };
}

/** What a mutating handler hands its service: the headers to record and the request's idempotency key, passed explicitly. */
export function operationCallOf(context: Pick<HandlerContext, 'values' | 'requestHeader'>): OperationCall {
  const idempotency = context.values.get(pendingKeyKey);
  return { headers: recordedHeaders(context.requestHeader), ...(idempotency ? { idempotency } : {}) };
}

/**
 * `X-ResetMask`: each header line parsed on its own, empty ones ignored, then merged (the Go SDK's
 * grpcheader); a malformed mask → INVALID_ARGUMENT naming the position.
 */
export function resetMaskOf(context: Pick<HandlerContext, 'values' | 'requestHeader'>): ResetMask {
  try {
    return resetMaskFromHeaderValues(requestHeaderLines(context, 'x-resetmask'));
  } catch (error) {
    if (error instanceof ResetMaskParseError) {
      throw new AppError('invalid_argument', `X-ResetMask: ${error.message}`, { violations: [{ field: 'x-resetmask', message: error.message }] });
    }
    throw error;
  }
}
