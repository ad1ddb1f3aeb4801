import { printResetMask, ResetMaskParseError, resetMaskFromHeaderValues, type ResetMask } from '../../engines/reset-mask/index.js';
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

/** One request's `X-ResetMask`, parsed once: the tree and its canonical print, or why it is malformed. */
type ParsedResetMask = { mask: ResetMask; printed: string } | { error: ResetMaskParseError };

/** Where a request keeps its parsed `X-ResetMask`, so the idempotency hash and the handler share one parse. */
const resetMaskKey = createContextKey<ParsedResetMask | undefined>(undefined, { description: 'the parsed X-ResetMask' });

/**
 * `X-ResetMask` of this request, parsed on first use and kept in the request's context values:
 * each header line parsed on its own, empty ones ignored, then merged (the Go SDK's grpcheader).
 */
function parsedResetMask(context: Pick<HandlerContext, 'values' | 'requestHeader'>): ParsedResetMask {
  let parsed = context.values.get(resetMaskKey);
  if (parsed === undefined) {
    try {
      const mask = resetMaskFromHeaderValues(requestHeaderLines(context, 'x-resetmask'));
      parsed = { mask, printed: printResetMask(mask) };
    } catch (error) {
      if (!(error instanceof ResetMaskParseError)) throw error;
      parsed = { error };
    }
    context.values.set(resetMaskKey, parsed);
  }
  return parsed;
}

/** The request's reset mask (parsed once per request); a malformed mask → INVALID_ARGUMENT naming the position. */
export function resetMaskOf(context: Pick<HandlerContext, 'values' | 'requestHeader'>): ResetMask {
  const parsed = parsedResetMask(context);
  if ('error' in parsed) {
    const { message } = parsed.error;
    throw new AppError('invalid_argument', `X-ResetMask: ${message}`, { violations: [{ field: 'x-resetmask', message }] });
  }
  return parsed.mask;
}

/**
 * What an idempotency key's request hash records of the mask: its canonical print (so equal masks
 * spelt differently are one request), or the raw lines of a malformed one (refused later, by the handler).
 */
export function resetMaskForHash(context: Pick<HandlerContext, 'values' | 'requestHeader'>): string {
  const parsed = parsedResetMask(context);
  return 'error' in parsed ? `raw:${JSON.stringify(requestHeaderLines(context, 'x-resetmask'))}` : parsed.printed;
}
