import { parseResetMask } from './parse-reset-mask.js';
import { printResetMask } from './print-reset-mask.js';
import { mergeResetMasks, type ResetMask } from './reset-mask.js';

/**
 * Parses every `X-ResetMask` header value and merges them, because HTTP and gRPC allow a header
 * to repeat (or be comma-joined by a proxy) and the Go SDK merges them. Absent → the empty mask.
 */
export function resetMaskFromHeaderValues(values: string | readonly string[] | null | undefined): ResetMask {
  if (values === null || values === undefined) return mergeResetMasks();
  const list = typeof values === 'string' ? [values] : values;
  return mergeResetMasks(...list.map(parseResetMask));
}

/**
 * The canonical header value for a set of raw values (what `Operation.request_headers` stores),
 * or undefined when the merged mask is empty, so an empty header is not recorded.
 */
export function canonicalResetMaskHeader(values: string | readonly string[] | null | undefined): string | undefined {
  const printed = printResetMask(resetMaskFromHeaderValues(values));
  return printed === '' ? undefined : printed;
}
