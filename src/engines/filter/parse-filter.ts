/*
 * The AIP-160 subset of docs/cloud-api.md ("List filters"), read by recursive descent straight from
 * the text (no token list), so every error names the column where the reader stood and what it
 * expected there. Precedence as AIP-160 gives it: OR binds tighter than AND, and terms side by side
 * (`a b`) are joined by AND.
 *
 *   filter      = [expression]
 *   expression  = sequence {"AND" sequence}
 *   sequence    = factor {factor}                  (implicit AND)
 *   factor      = term {"OR" term}
 *   term        = ["NOT" | "-"] simple
 *   simple      = restriction | "(" expression ")"
 *   restriction = path comparator value | path ":" value
 *   comparator  = "=" | "!=" | "<" | "<=" | ">" | ">="
 *   path        = name {"." (name | string)}
 *   value       = string | word
 */

/** The longest filter read, in characters. */
export const MAX_FILTER_LENGTH = 4096;
/** How deep parentheses and NOT may nest. */
export const MAX_FILTER_DEPTH = 32;
/** How many restrictions one filter may hold. */
export const MAX_FILTER_RESTRICTIONS = 64;

/** A malformed or ill-typed filter; callers answer INVALID_ARGUMENT with the message as is. */
export class FilterError extends Error {
  override readonly name = 'FilterError';

  constructor(
    /** What is wrong, without the position. */
    readonly reason: string,
    /** The 1-based column (in characters) where it was found; undefined when the error has none. */
    readonly column: number | undefined,
  ) {
    super(column === undefined ? reason : `${reason} at column ${column}`);
  }
}

export type Comparator = '=' | '!=' | '<' | '<=' | '>' | '>=' | ':';

/** A value as written: quoted (`"prod"`) or a bare word (`prod`, `42`, `STATE_RUNNING`, `*`). */
export interface SyntaxValue {
  readonly text: string;
  readonly quoted: boolean;
  /** 1-based column of its first character. */
  readonly column: number;
}

/** One segment of a field path; `quoted` segments are map keys (`labels."app/tier"`). */
export interface SyntaxName {
  readonly text: string;
  readonly quoted: boolean;
  readonly column: number;
}

export type SyntaxTree =
  | { readonly kind: 'and' | 'or'; readonly terms: readonly SyntaxTree[] }
  | { readonly kind: 'not'; readonly term: SyntaxTree }
  | {
      readonly kind: 'restriction';
      readonly path: readonly SyntaxName[];
      readonly comparator: Comparator;
      readonly value: SyntaxValue;
      readonly column: number;
    };

const COMPARATORS: readonly Comparator[] = ['<=', '>=', '!=', '=', '<', '>', ':'];
const KEYWORDS = new Set(['AND', 'OR', 'NOT']);
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
/** A bare map key or value: anything but whitespace, parentheses, quotes and comparator characters. */
const WORD = /[^\s()"'=<>!:]+/y;
const SPACE = /\s/;

function describe(char: string | undefined): string {
  return char === undefined ? 'the end of the filter' : JSON.stringify(char);
}

class Reader {
  private at = 0;
  private depth = 0;
  private restrictions = 0;

  constructor(private readonly text: string) {}

  private get column(): number {
    return this.at + 1;
  }

  private fail(expected: string, at = this.at): never {
    throw new FilterError(`expected ${expected}, found ${describe(this.text[at])}`, at + 1);
  }

  private skipSpace(): boolean {
    const start = this.at;
    while (this.at < this.text.length && SPACE.test(this.text[this.at] ?? '')) this.at++;
    return this.at > start;
  }

  private match(pattern: RegExp): string | undefined {
    pattern.lastIndex = this.at;
    const found = pattern.exec(this.text)?.[0];
    if (found !== undefined) this.at += found.length;
    return found;
  }

  /** A keyword standing alone (followed by space, a parenthesis or the end). */
  private keyword(word: 'AND' | 'OR' | 'NOT'): boolean {
    if (!this.text.startsWith(word, this.at)) return false;
    const next = this.text[this.at + word.length];
    if (next !== undefined && !SPACE.test(next) && next !== '(') return false;
    this.at += word.length;
    return true;
  }

  /** Reads one level deeper; `column` is where the level opens (its NOT, - or parenthesis). */
  private nest<T>(column: number, read: () => T): T {
    if (++this.depth > MAX_FILTER_DEPTH) throw new FilterError(`filter nests deeper than ${MAX_FILTER_DEPTH} levels`, column);
    const result = read();
    this.depth--;
    return result;
  }

  read(): SyntaxTree | undefined {
    this.skipSpace();
    if (this.at >= this.text.length) return undefined;
    const tree = this.expression();
    this.skipSpace();
    if (this.at < this.text.length) {
      this.fail(this.text[this.at] === ')' ? 'AND, OR or a restriction (this ")" closes nothing)' : 'AND, OR or a restriction');
    }
    return tree;
  }

  private expression(): SyntaxTree {
    return this.chain('AND', () => this.sequence());
  }

  /** `read {keyword read}`: the terms of one AND (an expression) or one OR (a factor). */
  private chain(keyword: 'AND' | 'OR', read: () => SyntaxTree): SyntaxTree {
    const terms = [read()];
    for (;;) {
      const mark = this.at;
      this.skipSpace();
      if (!this.keyword(keyword)) {
        this.at = mark;
        break;
      }
      if (!this.skipSpace() && this.text[this.at] !== '(') this.fail(`a space after ${keyword}`);
      terms.push(read());
    }
    return joined(keyword === 'AND' ? 'and' : 'or', terms);
  }

  private sequence(): SyntaxTree {
    const terms = [this.factor()];
    for (;;) {
      const mark = this.at;
      const spaced = this.skipSpace();
      const next = this.text[this.at];
      if (next === undefined || next === ')' || this.peekKeyword('AND') || this.peekKeyword('OR')) {
        this.at = mark;
        break;
      }
      if (!spaced) this.fail('a space, AND or OR between restrictions');
      terms.push(this.factor());
    }
    return joined('and', terms);
  }

  private peekKeyword(word: 'AND' | 'OR'): boolean {
    const mark = this.at;
    const found = this.keyword(word);
    this.at = mark;
    return found;
  }

  private factor(): SyntaxTree {
    return this.chain('OR', () => this.term());
  }

  private term(): SyntaxTree {
    const column = this.column;
    if (this.keyword('NOT')) {
      if (!this.skipSpace() && this.text[this.at] !== '(') this.fail('a space after NOT');
      return this.nest(column, () => ({ kind: 'not', term: this.simple() }));
    }
    if (this.text[this.at] === '-') {
      this.at++;
      return this.nest(column, () => ({ kind: 'not', term: this.simple() }));
    }
    return this.simple();
  }

  private simple(): SyntaxTree {
    if (this.text[this.at] === '(') {
      const open = this.at;
      this.at++;
      return this.nest(open + 1, () => {
        this.skipSpace();
        if (this.text[this.at] === ')') this.fail('an expression inside the parentheses');
        const inner = this.expression();
        this.skipSpace();
        if (this.text[this.at] !== ')') {
          if (this.at >= this.text.length) throw new FilterError('unclosed "("', open + 1);
          this.fail('")", AND or OR');
        }
        this.at++;
        return inner;
      });
    }
    return this.restriction();
  }

  private restriction(): SyntaxTree {
    const column = this.column;
    const path = this.path();
    this.skipSpace();
    const comparator = COMPARATORS.find((candidate) => this.text.startsWith(candidate, this.at));
    if (comparator === undefined) this.fail(`a comparator (=, !=, <, <=, >, >= or :) after ${path.map((name) => name.text).join('.')}`);
    this.at += comparator.length;
    this.skipSpace();
    const value = this.value();
    if (++this.restrictions > MAX_FILTER_RESTRICTIONS) throw new FilterError(`filter holds more than ${MAX_FILTER_RESTRICTIONS} restrictions`, column);
    return { kind: 'restriction', path, comparator, value, column };
  }

  private path(): SyntaxName[] {
    const first = this.name(false);
    if (KEYWORDS.has(first.text)) this.fail('a field name', first.column - 1);
    const path = [first];
    while (this.text[this.at] === '.') {
      this.at++;
      path.push(this.name(true));
    }
    return path;
  }

  /** A field name, or after a dot also a map key: quoted, or a bare word. */
  private name(mapKeyAllowed: boolean): SyntaxName {
    const column = this.column;
    if (mapKeyAllowed && (this.text[this.at] === '"' || this.text[this.at] === "'")) return { text: this.quoted(), quoted: true, column };
    const text = this.match(mapKeyAllowed ? /[A-Za-z0-9_][A-Za-z0-9_-]*/y : NAME);
    if (text === undefined) this.fail(mapKeyAllowed ? 'a field name or map key after "."' : 'a field name');
    return { text, quoted: false, column };
  }

  private value(): SyntaxValue {
    const column = this.column;
    const next = this.text[this.at];
    if (next === '"' || next === "'") return { text: this.quoted(), quoted: true, column };
    const text = this.match(WORD);
    if (text === undefined) this.fail('a value (a quoted string, a number, true, false, a name or *)');
    return { text, quoted: false, column };
  }

  /** A quoted string: `"…"` or `'…'`, with the escapes \\ \" \' \n \t \r and \uXXXX. */
  private quoted(): string {
    const quote = this.text[this.at];
    const open = this.at;
    this.at++;
    let out = '';
    for (;;) {
      const char = this.text[this.at];
      if (char === undefined) throw new FilterError('unterminated string', open + 1);
      this.at++;
      if (char === quote) return out;
      if (char !== '\\') {
        out += char;
        continue;
      }
      const escaped = this.text[this.at];
      const simple: Record<string, string> = { '\\': '\\', '"': '"', "'": "'", n: '\n', t: '\t', r: '\r' };
      if (escaped !== undefined && simple[escaped] !== undefined) {
        out += simple[escaped];
        this.at++;
      } else if (escaped === 'u' && /^[0-9A-Fa-f]{4}$/.test(this.text.slice(this.at + 1, this.at + 5))) {
        out += String.fromCharCode(parseInt(this.text.slice(this.at + 1, this.at + 5), 16));
        this.at += 5;
      } else {
        throw new FilterError('unknown escape in string (use \\\\, \\", \\\', \\n, \\t, \\r or \\uXXXX)', this.at);
      }
    }
  }
}

function joined(kind: 'and' | 'or', terms: SyntaxTree[]): SyntaxTree {
  const [only] = terms;
  return terms.length === 1 && only ? only : { kind, terms };
}

/**
 * Reads an AIP-160 filter (the subset of docs/cloud-api.md) into its syntax tree; empty or
 * whitespace only → undefined (every row matches). Throws FilterError naming the 1-based column
 * and what was expected there; refuses texts longer than MAX_FILTER_LENGTH, nested deeper than
 * MAX_FILTER_DEPTH or with more than MAX_FILTER_RESTRICTIONS restrictions.
 */
export function parseFilter(text: string): SyntaxTree | undefined {
  if (text.length > MAX_FILTER_LENGTH) throw new FilterError(`filter is longer than ${MAX_FILTER_LENGTH} characters`, undefined);
  return new Reader(text).read();
}
