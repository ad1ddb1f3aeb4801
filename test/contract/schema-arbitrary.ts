/**
 * fast-check arbitraries from OpenAPI 3.0 schemas (the JSON Schema subset the contracts use: type,
 * properties, required, additionalProperties, items, min/maxItems, enum, nullable, min/maxLength,
 * pattern, format, minimum/maximum, oneOf/anyOf/allOf, default). Schemas must already have their
 * `$ref`s resolved (see `resolveRefs`).
 *
 * `validValue(schema)` generates values the schema accepts; `invalidValue(schema)` generates values
 * it (most likely) rejects: wrong types, a missing required property, an unknown property, a string
 * past its maxLength, a number out of range, odd unicode.
 */
import fc from 'fast-check';

export interface Schema {
  type?: string;
  format?: string;
  pattern?: string;
  enum?: unknown[];
  nullable?: boolean;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minItems?: number;
  maxItems?: number;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  readOnly?: boolean;
}

/** A copy of `node` with every local `$ref` replaced by its target (cycles cut after `depth` levels). */
export function resolveRefs<T>(document: unknown, node: T, depth = 0): T {
  if (Array.isArray(node)) return node.map((item) => resolveRefs(document, item, depth)) as T;
  if (node === null || typeof node !== 'object') return node;
  const ref = (node as { $ref?: unknown }).$ref;
  if (typeof ref === 'string') {
    if (depth > 16) return {} as T;
    const target = ref
      .slice(2)
      .split('/')
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((current, part) => (current && typeof current === 'object' ? (current as Record<string, unknown>)[part] : undefined), document);
    return resolveRefs(document, target as T, depth + 1);
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, resolveRefs(document, value, depth)])) as T;
}

/** Strings a parser or a database may choke on: control characters, lone surrogates, RTL marks, NUL, emoji. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '\u0000',
    '\uD800',
    '\uDFFF\uD800',
    '\u202E\u202D',
    '\uFEFF',
    'e\u0301',
    '👩‍👩‍👧‍👦',
    '\\',
    '%00',
    '%',
    '../../etc/passwd',
    "' OR 1=1 --",
    '${{7*7}}',
    '\r\n',
    ' ',
    '',
  ),
);

/** Strings far past every documented limit. */
export const hugeString: fc.Arbitrary<string> = fc
  .constantFrom(10_000, 70_000)
  .chain((length) => fc.constantFrom('a', 'é', '\u0000', '😀').map((char) => char.repeat(length)));

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? 40, 60));
  switch (schema.format) {
    case 'email':
      return fc.emailAddress().filter((value) => value.length >= minLength && value.length <= (schema.maxLength ?? Infinity));
    case 'uri':
    case 'url':
      return fc.webUrl().filter((value) => value.length <= (schema.maxLength ?? Infinity));
    case 'date-time':
      return fc.date({ min: new Date('1971-01-01T00:00:00Z'), max: new Date('2199-12-31T00:00:00Z'), noInvalidDate: true }).map((date) => date.toISOString());
    case 'date':
      return fc
        .date({ min: new Date('1971-01-01T00:00:00Z'), max: new Date('2199-12-31T00:00:00Z'), noInvalidDate: true })
        .map((date) => date.toISOString().slice(0, 10));
    case 'uuid':
      return fc.uuid({ version: 4 });
    case 'byte':
      return fc.base64String({ maxLength: 64 });
    default:
      break;
  }
  if (schema.pattern) {
    return fc.stringMatching(new RegExp(schema.pattern)).filter((value) => value.length >= minLength && value.length <= (schema.maxLength ?? Infinity));
  }
  return fc.string({ minLength, maxLength, unit: 'grapheme' }).filter((value) => value.length >= minLength && value.length <= (schema.maxLength ?? Infinity));
}

function numberOf(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  const min = schema.minimum === undefined ? -1_000_000 : schema.minimum + (schema.exclusiveMinimum ? 1 : 0);
  const max = schema.maximum === undefined ? 1_000_000 : schema.maximum - (schema.exclusiveMaximum ? 1 : 0);
  return integer ? fc.integer({ min: Math.ceil(min), max: Math.floor(max) }) : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
}

/** Values the schema accepts. `forRequest` leaves out readOnly properties (a request never sends them). */
export function validValue(schema: Schema, forRequest = true, depth = 0): fc.Arbitrary<unknown> {
  const base = validBase(schema, forRequest, depth);
  return schema.nullable ? fc.oneof({ weight: 4, arbitrary: base }, { weight: 1, arbitrary: fc.constant(null) }) : base;
}

function validBase(schema: Schema, forRequest: boolean, depth: number): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.oneOf?.length) return fc.oneof(...schema.oneOf.map((option) => validValue(option, forRequest, depth + 1)));
  if (schema.anyOf?.length) return fc.oneof(...schema.anyOf.map((option) => validValue(option, forRequest, depth + 1)));
  if (schema.allOf?.length) return validValue(mergeAllOf(schema), forRequest, depth);
  switch (schema.type) {
    case 'string':
      return stringOf(schema);
    case 'integer':
      return numberOf(schema, true);
    case 'number':
      return numberOf(schema, false);
    case 'boolean':
      return fc.boolean();
    case 'array': {
      const minLength = schema.minItems ?? 0;
      const maxLength = Math.max(minLength, Math.min(schema.maxItems ?? 4, depth > 3 ? minLength : 4));
      return fc.array(validValue(schema.items ?? {}, forRequest, depth + 1), { minLength, maxLength });
    }
    case 'object':
    case undefined:
      if (!schema.properties && schema.type === undefined) return fc.jsonValue({ maxDepth: 2 });
      return objectOf(schema, forRequest, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectOf(schema: Schema, forRequest: boolean, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = Object.entries(schema.properties ?? {}).filter(([, property]) => !(forRequest && property.readOnly));
  const required = new Set(schema.required ?? []);
  const record = fc.record(Object.fromEntries(properties.map(([name, property]) => [name, validValue(property, forRequest, depth + 1)])), {
    requiredKeys: properties.map(([name]) => name).filter((name) => required.has(name)),
  });
  if (typeof schema.additionalProperties === 'object') {
    const extra = fc.dictionary(
      fc.string({ minLength: 1, maxLength: 12 }).filter((key) => !(key in (schema.properties ?? {}))),
      validValue(schema.additionalProperties, forRequest, depth + 1),
      { maxKeys: 3 },
    );
    return fc.tuple(record, extra).map(([known, more]) => ({ ...more, ...known }));
  }
  return record;
}

function mergeAllOf(schema: Schema): Schema {
  const merged: Schema = { ...schema, allOf: undefined, properties: { ...schema.properties }, required: [...(schema.required ?? [])] };
  for (const part of schema.allOf ?? []) {
    const flat = part.allOf ? mergeAllOf(part) : part;
    merged.type ??= flat.type;
    Object.assign(merged.properties ?? {}, flat.properties);
    merged.required?.push(...(flat.required ?? []));
    if (flat.additionalProperties !== undefined) merged.additionalProperties = flat.additionalProperties;
  }
  return merged;
}

/** A value of another JSON type than the schema's. */
function wrongType(schema: Schema): fc.Arbitrary<unknown> {
  const all: Array<[string, fc.Arbitrary<unknown>]> = [
    ['string', fc.oneof(fc.string({ maxLength: 8 }), oddString)],
    ['integer', fc.oneof(fc.integer(), fc.constantFrom(1e308, -1e308, 2 ** 53 + 1, 0.5))],
    ['number', fc.double()],
    ['boolean', fc.boolean()],
    ['array', fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 })],
    ['object', fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 })],
    ['null', fc.constant(null)],
  ];
  const own = schema.type ?? 'object';
  const others = all.filter(([type]) => type !== own && !(own === 'number' && type === 'integer') && !(type === 'null' && schema.nullable));
  return fc.oneof(...others.map(([, arbitrary]) => arbitrary));
}

/** Values the schema (most likely) rejects; some may still be accepted, which is fine for a fuzzer. */
export function invalidValue(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (schema.allOf?.length) return invalidValue(mergeAllOf(schema), depth);
  const options: fc.Arbitrary<unknown>[] = [wrongType(schema)];
  if (schema.enum) options.push(fc.string({ maxLength: 12 }).filter((value) => !schema.enum?.includes(value)));
  if (schema.type === 'string') {
    options.push(hugeString, oddString);
    if (schema.minLength) options.push(fc.constant(''));
    if (schema.pattern || schema.format) options.push(fc.string({ maxLength: 20 }));
  }
  if (schema.type === 'integer' || schema.type === 'number') {
    if (schema.maximum !== undefined) options.push(fc.constant(schema.maximum + 1));
    if (schema.minimum !== undefined) options.push(fc.constant(schema.minimum - 1));
    options.push(fc.constantFrom(1e21, -1e21, 1.5));
  }
  if (schema.type === 'array' && schema.maxItems !== undefined) {
    const item = validValue(schema.items ?? {}, true, depth + 1);
    options.push(fc.array(item, { minLength: schema.maxItems + 1, maxLength: schema.maxItems + 2 }));
  }
  if ((schema.type === 'object' || schema.properties) && depth < 3) {
    const valid = objectOf(schema, true, depth) as fc.Arbitrary<Record<string, unknown>>;
    const names = Object.keys(schema.properties ?? {});
    if (schema.required?.length) {
      options.push(
        fc
          .tuple(valid, fc.constantFrom(...schema.required))
          .map(([object, name]) => Object.fromEntries(Object.entries(object).filter(([key]) => key !== name))),
      );
    }
    if (schema.additionalProperties === false || schema.additionalProperties === undefined) {
      options.push(
        fc
          .tuple(
            valid,
            fc.string({ minLength: 1, maxLength: 10 }).filter((key) => !names.includes(key)),
            fc.jsonValue({ maxDepth: 1 }),
          )
          .map(([object, key, value]) => ({ ...object, [key]: value })),
      );
    }
    if (names.length > 0) {
      options.push(
        fc
          .constantFrom(...names)
          .chain((name) => fc.tuple(valid, fc.constant(name), invalidValue(schema.properties?.[name] ?? {}, depth + 1)))
          .map(([object, name, value]) => ({ ...object, [name]: value })),
      );
    }
  }
  return fc.oneof(...options);
}
