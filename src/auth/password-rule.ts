/**
 * The one password rule of every API family and setting: at least 8 characters, counted as the contracts'
 * `minLength: 8` counts them (JSON Schema counts Unicode code points, not UTF-16 units).
 */
export const MIN_PASSWORD_LENGTH = 8;

/** A password's length as the contracts count it: code points. */
function passwordLength(password: string): number {
  let length = 0;
  for (const _ of password) length += 1;
  return length;
}

/** Whether a password meets the minimum (and, when given, a contract's `maxLength`). */
export function isAcceptablePassword(password: string, maxLength = Number.POSITIVE_INFINITY): boolean {
  const length = passwordLength(password);
  return length >= MIN_PASSWORD_LENGTH && length <= maxLength;
}
