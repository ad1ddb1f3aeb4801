import type { IncomingHttpHeaders } from 'node:http2';

/** Headers' own methods, called on the subclass below (its typings declare them as properties, which TypeScript will not let a subclass override). */
const BASE = Headers.prototype;
/** A header name as Headers accepts it (an HTTP token); anything else makes Headers throw. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers strips leading and trailing HTTP whitespace from every value. */
const EDGE_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;

/**
 * The request header of a call: a real `Headers` holding what the HTTP/2 request sent (pseudo-headers
 * left out) and the server's `x-request-id`, filled from Node's header object only when it is first
 * changed or listed. `get` and `has` before that answer from Node's object exactly as the filled
 * Headers would (names case-insensitive, values trimmed, repeated values joined by ", "): a unary call
 * usually reads one header (authorization), and building the Headers cost ~2 µs a call.
 */
export class RequestHeaders extends (Headers as new () => object) {
  #raw: IncomingHttpHeaders | undefined;
  readonly #requestId: string;

  constructor(raw: IncomingHttpHeaders, requestId: string) {
    super();
    this.#raw = raw;
    this.#requestId = requestId;
  }

  #fill(): void {
    const raw = this.#raw;
    if (raw === undefined) return;
    this.#raw = undefined;
    for (const key in raw) {
      const value = raw[key];
      if (key.charCodeAt(0) === 58 /* ':' */ || value === undefined || key === 'x-request-id') continue;
      if (Array.isArray(value)) for (const item of value) BASE.append.call(this, key, item);
      else BASE.append.call(this, key, value);
    }
    BASE.set.call(this, 'x-request-id', this.#requestId);
  }

  /** The value the filled Headers would hold for `name` (null: none); undefined once filled or for a name Headers refuses. */
  #lookup(name: string): string | null | undefined {
    const raw = this.#raw;
    if (raw === undefined || !TOKEN.test(name)) return undefined;
    const key = name.toLowerCase();
    if (key === 'x-request-id') return this.#requestId;
    const value = raw[key];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.map((item) => item.replace(EDGE_WHITESPACE, '')).join(', ') : value.replace(EDGE_WHITESPACE, '');
  }

  get(name: string): string | null {
    const value = this.#lookup(name);
    if (value !== undefined) return value;
    this.#fill();
    return BASE.get.call(this, name);
  }

  has(name: string): boolean {
    const value = this.#lookup(name);
    if (value !== undefined) return value !== null;
    this.#fill();
    return BASE.has.call(this, name);
  }

  append(name: string, value: string): void {
    this.#fill();
    BASE.append.call(this, name, value);
  }

  set(name: string, value: string): void {
    this.#fill();
    BASE.set.call(this, name, value);
  }

  delete(name: string): void {
    this.#fill();
    BASE.delete.call(this, name);
  }

  getSetCookie(): string[] {
    this.#fill();
    return BASE.getSetCookie.call(this);
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    this.#fill();
    BASE.forEach.call(this, callback, thisArg);
  }

  keys(): ReturnType<Headers['keys']> {
    this.#fill();
    return BASE.keys.call(this);
  }

  values(): ReturnType<Headers['values']> {
    this.#fill();
    return BASE.values.call(this);
  }

  entries(): ReturnType<Headers['entries']> {
    this.#fill();
    return BASE.entries.call(this);
  }

  [Symbol.iterator](): ReturnType<Headers['entries']> {
    this.#fill();
    return BASE[Symbol.iterator].call(this);
  }
}
