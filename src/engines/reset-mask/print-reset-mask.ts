import { goJsonQuote } from './go-strings.js';
import { compareBytewise, type ResetMask } from './reset-mask.js';

const PLAIN_KEY = /^[A-Za-z0-9_]+$/;

/**
 * Quotes keys that are not plain identifiers/numbers so map keys with any characters survive,
 * the way the reference Go SDK does (Go's json.Marshal, which also escapes `<`, `>` and `&`).
 */
function printResetMaskKey(key: string): string {
  return PLAIN_KEY.test(key) ? key : goJsonQuote(key);
}

function printElements(mask: ResetMask): string[] {
  const elements: string[] = [];
  const add = (key: string, child: ResetMask): void => {
    const inner = printElements(child);
    if (inner.length === 0) elements.push(key);
    else if (inner.length === 1) elements.push(`${key}.${inner[0] ?? ''}`);
    else elements.push(`${key}.(${inner.join(',')})`);
  };
  for (const [key, child] of mask.children) add(printResetMaskKey(key), child);
  if (mask.wildcard !== undefined) add('*', mask.wildcard);
  return elements.sort(compareBytewise);
}

/**
 * Prints of the trees printed so far. A request's mask is printed for its idempotency hash and again
 * where its operation records it; the tree is the same object, and a tree is complete before anyone
 * prints it (the parser, the merge and the SDK build it first), so the second print is a look-up.
 */
const printed = new WeakMap<ResetMask, string>();

/**
 * Prints a mask in canonical form (elements sorted bytewise by their printed text, as the
 * reference Go SDK does; one child as `a.b`, several as `a.(b,c)`), so equal masks print equally
 * and the form stored in `Operation.request_headers` is stable.
 */
export function printResetMask(mask: ResetMask): string {
  let text = printed.get(mask);
  if (text === undefined) {
    text = printElements(mask).join(',');
    printed.set(mask, text);
  }
  return text;
}
