import { goJsonUnquote, goQuote, goQuoteBytes, utf8Bytes } from './go-strings.js';
import { emptyResetMask, type MutableResetMask, type ResetMask } from './reset-mask.js';

/*
 * A port of the reference mask parser (the public cloud's Go SDK, package fieldmask/mask): the same
 * lexer, the same state machine, the same tree (including how alternatives share sub-trees) and the
 * same error messages with the same 0-based byte positions. docs/cloud-api.md ("Reset mask
 * grammar") lists what it accepts and the two limits we add.
 */

/** A mask tree this deep cannot be copied by the reference either ("recursion too deep"). */
const RECURSION_TOO_DEEP = 1000;
/** Our limit (the reference has none): the parsed tree may hold at most this many nodes. */
const MAX_MASK_NODES = 100_000;
/** Our limit (the reference has none): bounds the parser's work on hostile masks. */
const MAX_PARSE_STEPS = 1_000_000;

const SPACES = ' \r\n\t';
/** How many bytes of context an error shows, and how many of them come before the position. */
const MAX_CONTEXT = 30;
const CONTEXT_BACK = 12;
/** COMBINING ENCLOSING SQUARE, drawn around the character at the error position. */
const ERROR_MARKER = utf8Bytes('\u20DE');
const ELLIPSIS = utf8Bytes('...');
const ascii = new TextDecoder('ascii');

/** A malformed reset mask; callers map it to INVALID_ARGUMENT and may send the message as is. */
export class ResetMaskParseError extends Error {
  override readonly name = 'ResetMaskParseError';

  constructor(
    /** What is wrong, e.g. `unmatched right brace`. */
    readonly reason: string,
    /** The 0-based byte offset in the mask text; undefined when the error has none (`unexpected end of mask`). */
    readonly position: number | undefined,
    /** The reference's full message, e.g. `unmatched right brace at position 1 near "a⃞)"`. */
    message: string,
  ) {
    super(message);
  }
}

function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** `at position N near "…"`: up to 30 bytes from 12 before the position, the position marked. */
function near(input: Uint8Array, position: number): string {
  const start = position >= CONTEXT_BACK ? position - CONTEXT_BACK : 0;
  const delta = position - start;
  const rest = input.subarray(start);
  const context = rest.length > MAX_CONTEXT ? concatBytes(rest.subarray(0, MAX_CONTEXT - 3), ELLIPSIS) : rest;
  const marked = concatBytes(context.subarray(0, delta), ERROR_MARKER, context.subarray(delta));
  return `at position ${position} near ${goQuoteBytes(marked)}`;
}

/** The reference's UnmarshalError text, optionally behind the prefixes of the stage that failed. */
function positionedError(input: Uint8Array, position: number, reason: string, options: { cause?: string; prefix?: string } = {}): ResetMaskParseError {
  const cause = options.cause === undefined ? '' : `: ${options.cause}`;
  return new ResetMaskParseError(reason, position, `${options.prefix ?? ''}${reason} ${near(input, position)}${cause}`);
}

type TokenKind = 'Comma' | 'Dot' | 'LBrace' | 'RBrace' | 'WildCard' | 'PlainKey';

interface Token {
  readonly kind: TokenKind;
  /** The key for PlainKey (quoted keys arrive unquoted), else the symbol itself. */
  readonly value: string;
  /** 0-based byte offset of the token's first byte. */
  readonly pos: number;
}

/** How the reference names a token in errors, e.g. `TokenDot("." pos 21)`. */
function describe(token: Token): string {
  return `Token${token.kind}(${goQuote(token.value)} pos ${token.pos})`;
}

const SYMBOLS: ReadonlyMap<number, TokenKind> = new Map([
  [0x2c, 'Comma'],
  [0x2e, 'Dot'],
  [0x28, 'LBrace'],
  [0x29, 'RBrace'],
  [0x2a, 'WildCard'],
]);

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0d || byte === 0x0a || byte === 0x09;
}

/** `[a-zA-Z0-9_]`: the only characters of an unquoted key. */
function isPlainKeyByte(byte: number | undefined): boolean {
  if (byte === undefined) return false;
  return (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte === 0x5f;
}

const TOKENIZER = 'tokenizer failure: ';
const LEXER = `${TOKENIZER}failed to tokenize: `;

/** Splits the mask into tokens, unquoting quoted keys as it goes (so its errors come first). */
function tokenize(input: Uint8Array): Token[] {
  // Symbols and unquoted keys are ASCII.
  const text = (from: number, to: number): string => ascii.decode(input.subarray(from, to));
  const tokens: Token[] = [];
  let pos = 0;
  for (;;) {
    while (isSpace(input[pos])) pos++;
    if (pos >= input.length) return tokens;
    const start = pos;
    const byte = input[pos] ?? 0;
    const symbol = SYMBOLS.get(byte);
    if (symbol !== undefined) {
      pos++;
      tokens.push({ kind: symbol, value: text(start, pos), pos: start });
    } else if (byte === 0x22) {
      pos++;
      // A backslash hides the next byte, so an escaped quote does not end the key.
      while (pos < input.length && input[pos] !== 0x22) pos += input[pos] === 0x5c ? 2 : 1;
      if (pos >= input.length) throw positionedError(input, start, 'unterminated quoted string', { prefix: LEXER });
      pos++;
      const unquoted = goJsonUnquote(input.subarray(start, pos));
      if ('error' in unquoted) {
        throw positionedError(input, start, 'failed to unquote token', { prefix: TOKENIZER, cause: `failed to parse quoted string: ${unquoted.error}` });
      }
      tokens.push({ kind: 'PlainKey', value: unquoted.value, pos: start });
    } else if (isPlainKeyByte(byte)) {
      while (isPlainKeyByte(input[pos])) pos++;
      tokens.push({ kind: 'PlainKey', value: text(start, pos), pos: start });
    } else {
      throw positionedError(input, start, 'unexpected symbol', { prefix: LEXER });
    }
  }
}

/**
 * One parenthesised part of the mask (the whole mask is the outermost). `starts` are the nodes the
 * part hangs below, `active` the ends of the path being read, `ends` the ends of the paths already
 * read; like the reference, a key new to several active nodes becomes ONE node shared by all of them.
 */
interface Level {
  readonly starts: MutableResetMask[];
  ends: MutableResetMask[];
  active: MutableResetMask[];
  readonly prev: Level | undefined;
  /** Byte offset of the `(` that opened it. */
  readonly pos: number;
}

class MaskBuilder {
  private steps = 0;

  constructor(
    private readonly input: Uint8Array,
    private level: Level,
  ) {}

  get current(): Level {
    return this.level;
  }

  /** Counts work so a hostile mask is refused instead of hogging the event loop. */
  private spend(count: number, at: number): void {
    this.steps += count;
    if (this.steps > MAX_PARSE_STEPS) throw positionedError(this.input, at, 'mask is too complex');
  }

  /**
   * Steps every active node to its `key` child (or `*` child), creating one shared child for the
   * nodes that lack it. Duplicates are dropped: the reference keeps them, which changes nothing
   * in the tree but can double the list at every group.
   */
  step(child: (node: MutableResetMask) => MutableResetMask | undefined, attach: (node: MutableResetMask, child: MutableResetMask) => void, at: number): void {
    this.spend(this.level.active.length, at);
    let created: MutableResetMask | undefined;
    const next = new Set<MutableResetMask>();
    for (const node of this.level.active) {
      const existing = child(node);
      if (existing !== undefined) next.add(existing);
      else {
        created ??= emptyResetMask();
        next.add(created);
        attach(node, created);
      }
    }
    this.level.active = [...next];
  }

  /** `,`: the path read so far is finished; the next one starts again from the level's start. */
  nextPath(at: number): void {
    this.spend(this.level.active.length, at);
    this.level.ends.push(...this.level.active);
    this.level.active = this.level.starts;
  }

  /** `(`: a level below, starting at the current ends. */
  push(pos: number): void {
    this.level = { starts: this.level.active, ends: [], active: this.level.active, prev: this.level, pos };
  }

  /** `)`: every path of the level continues with what follows. False when no level is open. */
  pop(at: number): boolean {
    const { prev } = this.level;
    if (prev === undefined) return false;
    this.spend(this.level.ends.length + this.level.active.length, at);
    prev.active = [...new Set([...this.level.ends, ...this.level.active])];
    this.level = prev;
    return true;
  }
}

/**
 * A tree copy of the parsed graph (shared nodes become separate copies, as the reference's final
 * Copy makes them), refused past the reference's depth limit with its message and past our size limit.
 */
function copyTree(root: ResetMask): MutableResetMask {
  let nodes = 0;
  const path: string[] = [];
  const copy = (node: ResetMask, depth: number): MutableResetMask => {
    if (depth >= RECURSION_TOO_DEEP) {
      const reason = 'recursion too deep';
      throw new ResetMaskParseError(reason, undefined, [...path, reason].join(': '));
    }
    if (++nodes > MAX_MASK_NODES) {
      throw new ResetMaskParseError('mask too large', undefined, `mask expands to more than ${MAX_MASK_NODES} fields`);
    }
    const out = emptyResetMask();
    const below = (key: string, child: ResetMask): MutableResetMask => {
      path.push(key);
      const copied = copy(child, depth + 1);
      path.pop();
      return copied;
    };
    if (node.wildcard !== undefined) out.wildcard = below('*', node.wildcard);
    for (const [key, child] of node.children) out.children.set(key, below(key, child));
    return out;
  };
  return copy(root, 0);
}

/**
 * Parses the `X-ResetMask` grammar exactly as the reference Go SDK does: `a`, `b.c`, `d.e.12`,
 * `f.(j.h,i.j).k`, `l.*.m`, JSON-quoted keys, whitespace between tokens, empty groups `()`;
 * whitespace only is the empty mask. Throws ResetMaskParseError with the reference's message,
 * which names the 0-based byte position and the text around it.
 */
export function parseResetMask(text: string): ResetMask {
  if ([...text].every((char) => SPACES.includes(char))) return emptyResetMask();
  const input = utf8Bytes(text);
  const tokens = tokenize(input);
  const root = emptyResetMask();
  const builder = new MaskBuilder(input, { starts: [root], ends: [], active: [root], prev: undefined, pos: 0 });
  let state: 'key' | 'separator' | 'levelStart' = 'key';
  for (let i = 0; i < tokens.length;) {
    const token = tokens[i];
    if (token === undefined) break;
    if (state === 'levelStart') {
      // An empty group `()` is allowed: its `)` is read as the separator after a field.
      state = token.kind === 'RBrace' ? 'separator' : 'key';
      continue;
    }
    if (state === 'key') {
      if (token.kind === 'PlainKey') {
        builder.step(
          (node) => node.children.get(token.value),
          (node, child) => node.children.set(token.value, child),
          token.pos,
        );
        state = 'separator';
      } else if (token.kind === 'WildCard') {
        builder.step(
          (node) => node.wildcard,
          (node, child) => (node.wildcard = child),
          token.pos,
        );
        state = 'separator';
      } else if (token.kind === 'LBrace') {
        builder.push(token.pos);
        state = 'levelStart';
      } else {
        throw positionedError(input, token.pos, `unexpected token ${describe(token)}, expecting field or submask`);
      }
    } else if (token.kind === 'Dot') {
      state = 'key';
    } else if (token.kind === 'Comma') {
      builder.nextPath(token.pos);
      state = 'key';
    } else if (token.kind === 'RBrace') {
      if (!builder.pop(token.pos)) throw positionedError(input, token.pos, 'unmatched right brace');
    } else {
      throw positionedError(input, token.pos, `unexpected token ${describe(token)}, expecting separator or closing brace`);
    }
    i++;
  }
  if (builder.current.prev !== undefined) throw positionedError(input, builder.current.pos, 'unclosed left brace');
  if (state !== 'separator') throw new ResetMaskParseError('unexpected end of mask', undefined, 'unexpected end of mask');
  return copyTree(root);
}
