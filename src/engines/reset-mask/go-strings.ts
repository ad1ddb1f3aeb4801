/**
 * The three string encodings the reference mask code (the public cloud's Go SDK) puts on the wire,
 * reproduced byte for byte so our error messages and canonical masks read exactly like the
 * reference's (docs/cloud-api.md, "Reset mask grammar"): Go's `%q` (error contexts), Go's
 * `json.Marshal` of a string (quoted keys in printed masks) and Go's `json.Unmarshal` into a
 * string, including its error messages (quoted keys in parsed masks).
 */

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** The UTF-8 bytes of a string; mask positions are byte offsets, as in Go. */
export function utf8Bytes(text: string): Uint8Array {
  return utf8Encoder.encode(text);
}

/** An invalid UTF-8 sequence, decoded (like Go's utf8.DecodeRune) one byte at a time. */
const INVALID = -1;

/** Decodes the rune at `i` with Go's accept ranges: `[rune, width]`, `[INVALID, 1]` when malformed. */
function decodeRune(bytes: Uint8Array, i: number): [number, number] {
  const b0 = bytes[i] ?? 0;
  if (b0 < 0x80) return [b0, 1];
  let width: number;
  let lo = 0x80;
  let hi = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) width = 2;
  else if (b0 >= 0xe0 && b0 <= 0xef) {
    width = 3;
    if (b0 === 0xe0) lo = 0xa0;
    if (b0 === 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    width = 4;
    if (b0 === 0xf0) lo = 0x90;
    if (b0 === 0xf4) hi = 0x8f;
  } else return [INVALID, 1];
  if (i + width > bytes.length) return [INVALID, 1];
  const b1 = bytes[i + 1] ?? 0;
  if (b1 < lo || b1 > hi) return [INVALID, 1];
  let rune = (b0 & (0xff >> (width + 1))) * 64 + (b1 & 0x3f);
  for (let k = 2; k < width; k++) {
    const b = bytes[i + k] ?? 0;
    if (b < 0x80 || b > 0xbf) return [INVALID, 1];
    rune = rune * 64 + (b & 0x3f);
  }
  return [rune, width];
}

const PRINTABLE_NON_ASCII = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u;

/** Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
function isGoPrint(rune: number): boolean {
  if (rune < 0x80) return rune >= 0x20 && rune < 0x7f;
  return PRINTABLE_NON_ASCII.test(String.fromCodePoint(rune));
}

function hex(value: number, digits: number): string {
  return value.toString(16).padStart(digits, '0');
}

const SHORT_ESCAPES: ReadonlyMap<number, string> = new Map([
  [0x07, '\\a'],
  [0x08, '\\b'],
  [0x0c, '\\f'],
  [0x0a, '\\n'],
  [0x0d, '\\r'],
  [0x09, '\\t'],
  [0x0b, '\\v'],
]);

function quoteRune(rune: number): string {
  if (rune === 0x22) return '\\"';
  if (rune === 0x5c) return '\\\\';
  if (isGoPrint(rune)) return String.fromCodePoint(rune);
  const short = SHORT_ESCAPES.get(rune);
  if (short !== undefined) return short;
  if (rune < 0x20 || rune === 0x7f) return `\\x${hex(rune, 2)}`;
  if (rune < 0x10000) return `\\u${hex(rune, 4)}`;
  return `\\U${hex(rune, 8)}`;
}

/** Go's strconv.Quote (`%q`) of a byte string: invalid UTF-8 bytes as `\xNN`. */
export function goQuoteBytes(bytes: Uint8Array): string {
  let out = '"';
  for (let i = 0; i < bytes.length;) {
    const [rune, width] = decodeRune(bytes, i);
    out += rune === INVALID ? `\\x${hex(bytes[i] ?? 0, 2)}` : quoteRune(rune);
    i += width;
  }
  return `${out}"`;
}

/** Go's strconv.Quote (`%q`) of a string. */
export function goQuote(text: string): string {
  return goQuoteBytes(utf8Bytes(text));
}

/**
 * Go's `json.Marshal` of a string: like JSON.stringify, but `<`, `>`, `&`, U+2028 and U+2029 are
 * escaped too (Go's HTML-safe default) and a lone surrogate becomes `\ufffd`.
 */
export function goJsonQuote(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (char === '"' || char === '\\') out += `\\${char}`;
    else if (code === 0x08) out += '\\b';
    else if (code === 0x0c) out += '\\f';
    else if (code === 0x0a) out += '\\n';
    else if (code === 0x0d) out += '\\r';
    else if (code === 0x09) out += '\\t';
    else if (code < 0x20 || char === '<' || char === '>' || char === '&' || code === 0x2028 || code === 0x2029) out += `\\u${hex(code, 4)}`;
    else if (code >= 0xd800 && code <= 0xdfff) out += '\\ufffd';
    else out += char;
  }
  return `${out}"`;
}

/** Go's json quoteChar: how its syntax errors name the offending byte. */
function quoteChar(byte: number): string {
  if (byte === 0x27) return "'\\''";
  if (byte === 0x22) return `'"'`;
  // Go converts the byte to the rune U+00XX before quoting it.
  const quoted = quoteRune(byte);
  return `'${quoted}'`;
}

function isHexDigit(byte: number): boolean {
  return (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66);
}

function hexValue(bytes: Uint8Array, at: number): number {
  return Number.parseInt(utf8Decoder.decode(bytes.subarray(at, at + 4)), 16);
}

const SIMPLE_ESCAPES: ReadonlyMap<number, string> = new Map([
  [0x22, '"'],
  [0x5c, '\\'],
  [0x2f, '/'],
  [0x62, '\b'],
  [0x66, '\f'],
  [0x6e, '\n'],
  [0x72, '\r'],
  [0x74, '\t'],
]);

/**
 * Go's `json.Unmarshal` of a JSON string literal (the bytes from the opening to the closing quote)
 * into a string: the decoded value, or the message of Go's syntax error. Lone surrogate escapes
 * decode to U+FFFD as in Go (JSON.parse would keep them).
 */
export function goJsonUnquote(literal: Uint8Array): { value: string } | { error: string } {
  const last = literal.length - 1;
  let value = '';
  let runStart = 1;
  const flush = (end: number): void => {
    value += utf8Decoder.decode(literal.subarray(runStart, end));
  };
  let i = 1;
  while (i < last) {
    const c = literal[i] ?? 0;
    if (c < 0x20) return { error: `invalid character ${quoteChar(c)} in string literal` };
    if (c !== 0x5c) {
      i++;
      continue;
    }
    flush(i);
    const escape = literal[i + 1] ?? 0;
    const simple = SIMPLE_ESCAPES.get(escape);
    if (simple !== undefined) {
      value += simple;
      i += 2;
    } else if (escape === 0x75) {
      for (let k = i + 2; k < i + 6; k++) {
        const digit = literal[k] ?? 0;
        if (!isHexDigit(digit)) return { error: `invalid character ${quoteChar(digit)} in \\u hexadecimal character escape` };
      }
      const unit = hexValue(literal, i + 2);
      i += 6;
      if (unit >= 0xd800 && unit <= 0xdfff) {
        // A surrogate counts only as the high half of a pair whose low half follows at once.
        const next =
          literal[i] === 0x5c && literal[i + 1] === 0x75 && [2, 3, 4, 5].every((k) => isHexDigit(literal[i + k] ?? 0)) ? hexValue(literal, i + 2) : -1;
        if (unit < 0xdc00 && next >= 0xdc00 && next <= 0xdfff) {
          value += String.fromCharCode(unit, next);
          i += 6;
        } else value += '\ufffd';
      } else value += String.fromCharCode(unit);
    } else return { error: `invalid character ${quoteChar(escape)} in string escape code` };
    runStart = i;
  }
  flush(last);
  return { value };
}
