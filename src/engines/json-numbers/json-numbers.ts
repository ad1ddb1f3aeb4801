/** A number in a JSON text that JavaScript cannot hold as written. */
export interface UnsafeNumber {
  /** Dotted path of the value (`settings.animationDuration`, `items[2].size`); empty for a top-level number. */
  path: string;
  /** The number as the client wrote it (cut at 40 characters). */
  literal: string;
  /** What the client reads: why the value is refused. */
  message: string;
}

/** Any number that could be unsafe has 16 digits in a row (an integer beyond 2^53) or a 3-digit exponent (beyond ±1.8e308). */
const SUSPICIOUS = /\d{16}|[eE][+-]?\d{3}/;
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

interface Level {
  array: boolean;
  /** The current key (objects) or index (arrays). */
  at: string | number;
}

/**
 * The first number in a JSON text that `JSON.parse` would not keep as written: one that is not
 * finite (`1e999` becomes Infinity, which JSON.stringify writes as null) or an integer literal
 * beyond ±(2^53−1) (rounded to another integer). Fractions and exponents within range are fine
 * (they are approximations by nature). A text that is not JSON never throws: the answer is then
 * only a hint (its parser refuses the text anyway). Texts with no long digit run and no 3-digit exponent — almost
 * all — are answered from one regular-expression test, without a scan.
 */
export function findUnsafeNumber(text: string): UnsafeNumber | undefined {
  if (!SUSPICIOUS.test(text)) return undefined;
  const levels: Level[] = [];
  let index = 0;
  while (index < text.length) {
    const char = text[index]!;
    if (char === '"') {
      const end = stringEnd(text, index);
      const level = levels[levels.length - 1];
      // A string followed by ':' is an object key.
      if (level && !level.array && nextNonSpace(text, end) === ':') level.at = keyOf(text.slice(index, end));
      index = end;
    } else if (char === '{' || char === '[') {
      levels.push({ array: char === '[', at: char === '[' ? 0 : '' });
      index++;
    } else if (char === '}' || char === ']') {
      levels.pop();
      index++;
    } else if (char === ',') {
      const level = levels[levels.length - 1];
      if (level?.array) level.at = (level.at as number) + 1;
      index++;
    } else if (char === '-' || (char >= '0' && char <= '9')) {
      NUMBER.lastIndex = index;
      const match = NUMBER.exec(text);
      if (!match) return undefined;
      const literal = match[0];
      index += literal.length;
      const value = Number(literal);
      const integerLiteral = match[1] === undefined && match[2] === undefined;
      if (!Number.isFinite(value)) return unsafe(levels, literal, 'must be a finite number');
      if (integerLiteral && !Number.isSafeInteger(value)) return unsafe(levels, literal, 'must be an integer between -(2^53-1) and 2^53-1');
    } else {
      index++;
    }
  }
  return undefined;
}

/** A quoted key as its text; a malformed one (the text may not be JSON: it is checked before it is parsed) as written. */
function keyOf(quoted: string): string {
  try {
    return String(JSON.parse(quoted));
  } catch {
    return quoted.slice(1, -1);
  }
}

function unsafe(levels: Level[], literal: string, rule: string): UnsafeNumber {
  const shown = literal.length > 40 ? `${literal.slice(0, 37)}...` : literal;
  return { path: pathOf(levels), literal: shown, message: `${rule} (${shown} is not)` };
}

function pathOf(levels: Level[]): string {
  let path = '';
  for (const level of levels) {
    if (level.array) path += `[${level.at}]`;
    else path += path === '' ? String(level.at) : `.${String(level.at)}`;
  }
  return path;
}

/** The index just after the string that starts at `start` (its opening quote). */
function stringEnd(text: string, start: number): number {
  let index = start + 1;
  while (index < text.length) {
    const char = text[index];
    if (char === '\\') index += 2;
    else if (char === '"') return index + 1;
    else index++;
  }
  return index;
}

function nextNonSpace(text: string, from: number): string | undefined {
  for (let index = from; index < text.length; index++) {
    const char = text[index]!;
    if (char !== ' ' && char !== '\t' && char !== '\n' && char !== '\r') return char;
  }
  return undefined;
}
