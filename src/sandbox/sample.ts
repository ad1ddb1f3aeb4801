import { randomInt, randomUUID } from 'node:crypto';

/** A JSON schema as the dereferenced OpenAPI 3.0 documents hold it (only what sampling reads). */
export interface SchemaObject {
  type?: string;
  format?: string;
  enum?: unknown[];
  const?: unknown;
  example?: unknown;
  default?: unknown;
  nullable?: boolean;
  readOnly?: boolean;
  writeOnly?: boolean;
  properties?: Record<string, SchemaObject>;
  required?: string[];
  additionalProperties?: boolean | SchemaObject;
  items?: SchemaObject;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean | number;
  exclusiveMaximum?: boolean | number;
  multipleOf?: number;
  allOf?: SchemaObject[];
  oneOf?: SchemaObject[];
  anyOf?: SchemaObject[];
}

/**
 * A value for a response schema, as Prism makes one: `static` takes each schema's own `example` (or
 * `default`, the first `enum` value) and fills the rest with plain values of the right format;
 * `dynamic` (Prism's `Prefer: dynamic=true`) ignores the examples and makes random values within
 * the schema's bounds. Write-only properties are left out (this is a response).
 */
export function sampleOf(schema: SchemaObject, dynamic: boolean, depth = 0): unknown {
  if (schema.allOf) {
    const parts = schema.allOf.map((part) => sampleOf(part, dynamic, depth));
    return parts.every((part) => typeof part === 'object' && part !== null && !Array.isArray(part)) ? Object.assign({}, ...parts) : parts[0];
  }
  const choices = schema.oneOf ?? schema.anyOf;
  if (choices && choices.length > 0) return sampleOf(dynamic ? choices[randomInt(choices.length)]! : choices[0]!, dynamic, depth);
  if (schema.const !== undefined) return schema.const;
  if (schema.enum && schema.enum.length > 0) return dynamic ? schema.enum[randomInt(schema.enum.length)] : schema.enum[0];
  if (!dynamic && schema.example !== undefined) return schema.example;
  if (!dynamic && schema.default !== undefined) return schema.default;
  const type = schema.type ?? (schema.properties ? 'object' : schema.items ? 'array' : 'string');
  switch (type) {
    case 'object':
      return objectOf(schema, dynamic, depth);
    case 'array':
      return arrayOf(schema, dynamic, depth);
    case 'integer':
    case 'number':
      return numberOf(schema, dynamic, type === 'integer');
    case 'boolean':
      return dynamic ? randomInt(2) === 1 : true;
    default:
      return stringOf(schema, dynamic);
  }
}

function objectOf(schema: SchemaObject, dynamic: boolean, depth: number): Record<string, unknown> {
  const required = new Set(schema.required ?? []);
  const value: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (property.writeOnly) continue;
    // Optional properties: all of them statically (the fullest answer), about half dynamically; deep
    // optional structures are cut short so recursive schemas end.
    if (!required.has(name) && (depth > 4 || (dynamic && randomInt(2) === 0))) continue;
    value[name] = sampleOf(property, dynamic, depth + 1);
  }
  return value;
}

function arrayOf(schema: SchemaObject, dynamic: boolean, depth: number): unknown[] {
  const min = schema.minItems ?? 0;
  const max = Math.min(schema.maxItems ?? min + 3, min + 3);
  const count = dynamic ? min + randomInt(max - min + 1) : Math.min(Math.max(min, 1), max);
  return Array.from({ length: depth > 4 ? min : count }, () => sampleOf(schema.items ?? {}, dynamic, depth + 1));
}

function numberOf(schema: SchemaObject, dynamic: boolean, integer: boolean): number {
  let low = typeof schema.minimum === 'number' ? schema.minimum : 0;
  let high = typeof schema.maximum === 'number' ? schema.maximum : Math.max(low, 0) + 1000;
  if (schema.exclusiveMinimum === true || typeof schema.exclusiveMinimum === 'number')
    low = (typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum : low) + 1;
  if (schema.exclusiveMaximum === true || typeof schema.exclusiveMaximum === 'number')
    high = (typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum : high) - 1;
  const value = dynamic ? low + Math.random() * Math.max(0, high - low) : Math.max(low, Math.min(high, 1));
  const step = schema.multipleOf ?? (integer ? 1 : 0);
  return step > 0 ? Math.min(high, Math.ceil(value / step) * step) : value;
}

const FORMATS: Record<string, (dynamic: boolean) => string> = {
  'date-time': (dynamic) => (dynamic ? new Date(Date.now() - randomInt(1e9)) : new Date('2026-01-01T00:00:00Z')).toISOString(),
  date: (dynamic) => (dynamic ? new Date(Date.now() - randomInt(1e9)) : new Date('2026-01-01T00:00:00Z')).toISOString().slice(0, 10),
  uuid: (dynamic) => (dynamic ? randomUUID() : '7a1b2c3d-4e5f-4a6b-9c7d-8e9f0a1b2c3d'),
  email: (dynamic) => (dynamic ? `user${randomInt(1e6)}@example.com` : 'user@example.com'),
  uri: (dynamic) => (dynamic ? `https://example.com/${randomInt(1e6)}` : 'https://example.com/'),
  byte: () => Buffer.from('sandbox').toString('base64'),
};

function stringOf(schema: SchemaObject, dynamic: boolean): string {
  const format = schema.format ? FORMATS[schema.format] : undefined;
  let value = format ? format(dynamic) : schema.pattern ? fromPattern(schema.pattern, dynamic) : dynamic ? `sandbox-${randomInt(1e6).toString(36)}` : 'string';
  if (schema.pattern && !new RegExp(schema.pattern, 'u').test(value) && typeof schema.example === 'string') value = schema.example;
  const min = schema.minLength ?? 0;
  if (value.length < min) value = value.padEnd(min, value.at(-1) ?? 'x');
  if (schema.maxLength !== undefined && value.length > schema.maxLength) value = value.slice(0, schema.maxLength);
  return value;
}

/**
 * A string matching a simple regular expression: literals, character classes (`[a-f0-9]`, `\S`,
 * `\d`, `\w`), the quantifiers `{n}`, `{n,m}`, `?`, `*`, `+`, anchors. What a contract's `pattern`
 * uses; anything else gives a best effort the caller checks.
 */
function fromPattern(pattern: string, dynamic: boolean): string {
  let out = '';
  let at = 0;
  const pick = (set: string) => (dynamic ? set[randomInt(set.length)]! : set[0]!);
  while (at < pattern.length) {
    let set: string;
    const char = pattern[at]!;
    if (char === '^' || char === '$') {
      at++;
      continue;
    }
    if (char === '[') {
      const end = pattern.indexOf(']', at + 2);
      set = expandClass(pattern.slice(at + 1, end));
      at = end + 1;
    } else if (char === '\\') {
      set = ESCAPES[pattern[at + 1]!] ?? pattern[at + 1]!;
      at += 2;
    } else {
      set = char;
      at++;
    }
    let count = 1;
    const quantifier = /^(\{(\d+)(?:,(\d*))?\}|[?*+])/.exec(pattern.slice(at));
    if (quantifier) {
      at += quantifier[0].length;
      const [low, high] =
        quantifier[0] === '?'
          ? [0, 1]
          : quantifier[0] === '*'
            ? [0, 3]
            : quantifier[0] === '+'
              ? [1, 3]
              : [Number(quantifier[2]), Number(quantifier[3] || quantifier[2])];
      count = dynamic ? low + randomInt(Math.min(high, low + 8) - low + 1) : Math.max(low, Math.min(high, 1));
    }
    for (let index = 0; index < count; index++) out += pick(set);
  }
  return out;
}

const ESCAPES: Record<string, string> = {
  d: '0123456789',
  w: 'abcdefghijklmnopqrstuvwxyz0123456789_',
  S: 'abcdefghijklmnopqrstuvwxyz',
  s: ' ',
};

function expandClass(body: string): string {
  let set = '';
  for (let at = 0; at < body.length; at++) {
    const char = body[at]!;
    if (char === '\\') {
      set += ESCAPES[body[at + 1]!] ?? body[at + 1]!;
      at++;
    } else if (body[at + 1] === '-' && at + 2 < body.length) {
      for (let code = char.charCodeAt(0); code <= body.charCodeAt(at + 2); code++) set += String.fromCharCode(code);
      at += 2;
    } else set += char;
  }
  // Letters and digits first: a static sample reads as an ordinary value.
  return [...set].sort((a, b) => Number(!/[A-Za-z0-9]/.test(a)) - Number(!/[A-Za-z0-9]/.test(b))).join('');
}
