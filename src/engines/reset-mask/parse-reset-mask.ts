import { emptyResetMask, type MutableResetMask, type ResetMask } from './reset-mask.js';

/** Deeper nesting than this is refused, so a hostile header cannot exhaust the stack. */
const MAX_NESTING = 64;
/** Parenthesised groups multiply paths; this bounds the tree-building work per mask. */
const MAX_INSERT_STEPS = 100_000;

/** A malformed reset mask; callers map it to INVALID_ARGUMENT and may send the message as is. */
export class ResetMaskParseError extends Error {
  override readonly name = 'ResetMaskParseError';

  constructor(
    /** What is wrong, e.g. `empty element`. */
    readonly reason: string,
    /** The 1-based character position in the mask text. */
    readonly position: number,
    /** The mask text around the position. */
    readonly near: string,
  ) {
    super(`invalid reset mask: ${reason} at position ${position} near ${JSON.stringify(near)}`);
  }
}

type Segment =
  | { readonly kind: 'key'; readonly key: string }
  | { readonly kind: 'wildcard' }
  | { readonly kind: 'group'; readonly alternatives: readonly Element[] };

interface Element {
  readonly segments: readonly Segment[];
  /** 0-based offset of the element's first character, for errors found while building. */
  readonly start: number;
}

function isSpace(c: string | undefined): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r';
}

/** Characters with a meaning of their own; everything else printable may form a plain key. */
function isPlainKeyChar(c: string): boolean {
  return !isSpace(c) && !'.,()*"'.includes(c) && c >= ' ' && c !== '\x7f';
}

class Parser {
  private pos = 0;
  private depth = 0;

  constructor(private readonly text: string) {}

  fail(reason: string, at: number = this.pos): never {
    const near = this.text.slice(Math.max(0, at - 8), at + 8);
    throw new ResetMaskParseError(reason, at + 1, near);
  }

  private peek(): string | undefined {
    return this.text[this.pos];
  }

  private skipSpaces(): void {
    while (isSpace(this.peek())) this.pos++;
  }

  parseTop(): Element[] {
    this.skipSpaces();
    if (this.pos === this.text.length) return [];
    const elements = this.parseList();
    this.skipSpaces();
    const c = this.peek();
    if (c === ')') this.fail('unbalanced parentheses: ")" without "("');
    if (c !== undefined) this.fail('expected "," or "." between fields');
    return elements;
  }

  /** A comma-separated list of at least one element; stops before ")" or the end. */
  private parseList(): Element[] {
    const elements: Element[] = [];
    for (;;) {
      this.skipSpaces();
      const c = this.peek();
      if (c === undefined || c === ',' || c === ')') this.fail('empty element');
      elements.push(this.parseElement());
      this.skipSpaces();
      if (this.peek() !== ',') return elements;
      this.pos++;
    }
  }

  private parseElement(): Element {
    const start = this.pos;
    const segments: Segment[] = [this.parseSegment()];
    for (;;) {
      this.skipSpaces();
      if (this.peek() !== '.') return { segments, start };
      this.pos++;
      this.skipSpaces();
      const c = this.peek();
      if (c === undefined || c === ',' || c === ')') this.fail('trailing "." without a field after it');
      segments.push(this.parseSegment());
    }
  }

  private parseSegment(): Segment {
    const c = this.peek();
    if (c === '(') return this.parseGroup();
    if (c === '*') {
      this.pos++;
      return { kind: 'wildcard' };
    }
    if (c === '"') return { kind: 'key', key: this.parseQuoted() };
    if (c === '.') this.fail('empty field name before "."');
    if (c === undefined || c === ',' || c === ')') this.fail('empty element');
    const start = this.pos;
    while (this.pos < this.text.length && isPlainKeyChar(this.text[this.pos] ?? '')) this.pos++;
    if (this.pos === start) this.fail(`unexpected character ${JSON.stringify(c)}`);
    return { kind: 'key', key: this.text.slice(start, this.pos) };
  }

  private parseGroup(): Segment {
    const open = this.pos;
    if (++this.depth > MAX_NESTING) this.fail(`parentheses nested deeper than ${MAX_NESTING}`);
    this.pos++;
    this.skipSpaces();
    if (this.peek() === ')') this.fail('empty element');
    if (this.peek() === undefined) this.fail('unbalanced parentheses: "(" is never closed', open);
    const alternatives = this.parseList();
    this.skipSpaces();
    const c = this.peek();
    if (c === undefined) this.fail('unbalanced parentheses: "(" is never closed', open);
    if (c !== ')') this.fail('expected "," or ")" in a group');
    this.pos++;
    this.depth--;
    return { kind: 'group', alternatives };
  }

  private parseQuoted(): string {
    const open = this.pos;
    let i = open + 1;
    for (;;) {
      const c = this.text[i];
      if (c === undefined) this.fail('unterminated quoted key', open);
      if (c === '\\') i += 2;
      else if (c === '"') break;
      else i++;
    }
    const literal = this.text.slice(open, i + 1);
    let key: unknown;
    try {
      key = JSON.parse(literal);
    } catch {
      this.fail('invalid quoted key (it must be a JSON string)', open);
    }
    if (typeof key !== 'string') this.fail('invalid quoted key (it must be a JSON string)', open);
    this.pos = i + 1;
    return key;
  }
}

class TreeBuilder {
  private steps = 0;

  constructor(private readonly parser: Parser) {}

  /** Inserts `segments[i..]` then `rest` below `node`, expanding groups into each alternative. */
  insert(node: MutableResetMask, segments: readonly Segment[], rest: readonly Segment[], start: number): void {
    if (++this.steps > MAX_INSERT_STEPS) this.parser.fail('mask expands to too many paths', start);
    const [head, ...tail] = segments;
    if (head === undefined) {
      if (rest.length > 0) this.insert(node, rest, [], start);
      return;
    }
    switch (head.kind) {
      case 'key': {
        let child = node.children.get(head.key);
        if (child === undefined) {
          child = emptyResetMask();
          node.children.set(head.key, child);
        }
        this.insert(child, tail, rest, start);
        return;
      }
      case 'wildcard': {
        node.wildcard ??= emptyResetMask();
        this.insert(node.wildcard, tail, rest, start);
        return;
      }
      case 'group': {
        const after = [...tail, ...rest];
        for (const alternative of head.alternatives) this.insert(node, alternative.segments, after, start);
        return;
      }
    }
  }
}

/**
 * Parses the `X-ResetMask` grammar (`a`, `b.c`, `d.e.12`, `f.(j.h,i.j).k`, `l.*.m`, JSON-quoted
 * keys, whitespace around tokens) into a tree; the empty string is the empty mask. Throws
 * ResetMaskParseError naming the position, so clients can find their mistake.
 */
export function parseResetMask(text: string): ResetMask {
  const parser = new Parser(text);
  const elements = parser.parseTop();
  const root = emptyResetMask();
  const builder = new TreeBuilder(parser);
  for (const element of elements) builder.insert(root, element.segments, [], element.start);
  return root;
}
