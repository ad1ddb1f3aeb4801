import type { DescEnum, DescField, DescMessage } from '@bufbuild/protobuf';
import { FilterError, parseFilter, type Comparator, type SyntaxName, type SyntaxTree, type SyntaxValue } from './parse-filter.js';

/** How a compared field's values order and are written in the resource's JSON. */
export type FilterValueType = 'string' | 'number' | 'bool' | 'enum' | 'timestamp' | 'duration';

/** An ordering or equality comparator (`:` on a single value reads as `=`). */
export type Operator = Exclude<Comparator, ':'>;

/**
 * One test on a field, by its path of JSON names as the resource's JSON mapping spells them
 * (`['status', 'state']`). Values are already checked against the field's type: a number or a
 * duration as a decimal string (a duration in seconds), a timestamp as RFC 3339 text, an enum as
 * its value name.
 */
export type FilterCondition =
  | {
      readonly kind: 'compare';
      readonly path: readonly string[];
      readonly type: FilterValueType;
      readonly operator: Operator;
      readonly value: string | boolean;
    }
  /** A map entry compared: `labels.env = "prod"` (path to the map, then the key). */
  | {
      readonly kind: 'map-entry';
      readonly path: readonly string[];
      readonly key: string;
      readonly type: FilterValueType;
      readonly operator: Operator;
      readonly value: string | boolean;
    }
  /** `labels:team`: the map has the key. */
  | { readonly kind: 'has-key'; readonly path: readonly string[]; readonly key: string }
  /** `ssh_keys:"…"`: the repeated field holds the value. */
  | { readonly kind: 'contains'; readonly path: readonly string[]; readonly type: FilterValueType; readonly value: string | boolean }
  /** `field:*`: set (a message or optional field present, a list or map not empty, a map key present when `key` is given). */
  | { readonly kind: 'present'; readonly path: readonly string[]; readonly key?: string; readonly shape: 'value' | 'list' | 'map' };

/** A checked filter over one resource type. */
export type Filter = { readonly kind: 'and' | 'or'; readonly terms: readonly Filter[] } | { readonly kind: 'not'; readonly term: Filter } | FilterCondition;

export interface FilterOptions {
  /**
   * Fields no filter may name (secrets: a filter on them would read them out one guess at a time);
   * they answer as unknown fields do.
   */
  hidden?(field: DescField): boolean;
  /** Other spellings of field paths, e.g. `service_account_id` for `spec.service_account_id`. */
  aliases?: Readonly<Record<string, string>>;
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;
const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const INTEGER = /^[+-]?\d+$/;
const DURATION = /^([+-]?(\d+(\.\d{1,9})?|\.\d{1,9}))s$/;
const INTEGER_TYPES = new Set(['int32', 'int64', 'uint32', 'uint64', 'sint32', 'sint64', 'fixed32', 'fixed64', 'sfixed32', 'sfixed64']);

function valueTypeOf(
  field: { fieldKind: string; scalar?: unknown; message?: DescMessage; enum?: DescEnum },
  scalarName: string | undefined,
): FilterValueType | undefined {
  if (field.enum !== undefined) return 'enum';
  if (field.message !== undefined) {
    if (field.message.typeName === 'google.protobuf.Timestamp') return 'timestamp';
    if (field.message.typeName === 'google.protobuf.Duration') return 'duration';
    return undefined;
  }
  if (scalarName === 'string') return 'string';
  if (scalarName === 'bool') return 'bool';
  if (scalarName === 'bytes' || scalarName === undefined) return undefined;
  return 'number';
}

/** protobuf-es's ScalarType numbers, named as in .proto files. */
const SCALAR_NAMES: Record<number, string> = {
  1: 'double',
  2: 'float',
  3: 'int64',
  4: 'uint64',
  5: 'int32',
  6: 'fixed64',
  7: 'fixed32',
  8: 'bool',
  9: 'string',
  12: 'bytes',
  13: 'uint32',
  15: 'sfixed32',
  16: 'sfixed64',
  17: 'sint32',
  18: 'sint64',
};

/** The type of a field's single values (a list's elements, a map's values): what comparisons check literals against. */
interface Leaf {
  type: FilterValueType | undefined;
  scalar: string | undefined;
  enum: DescEnum | undefined;
  label: string;
}

class Resolver {
  constructor(
    private readonly schema: DescMessage,
    private readonly options: FilterOptions,
  ) {}

  resolve(tree: SyntaxTree): Filter {
    switch (tree.kind) {
      case 'and':
      case 'or':
        return { kind: tree.kind, terms: tree.terms.map((term) => this.resolve(term)) };
      case 'not':
        return { kind: 'not', term: this.resolve(tree.term) };
      case 'restriction':
        return this.restriction(tree.path, tree.comparator, tree.value);
    }
  }

  private field(message: DescMessage, name: SyntaxName, label: string): DescField {
    const field = name.quoted ? undefined : message.fields.find((candidate) => candidate.jsonName === name.text || candidate.name === name.text);
    if (field === undefined || this.options.hidden?.(field)) throw new FilterError(`unknown field "${label}"`, name.column);
    return field;
  }

  private expandAlias(path: readonly SyntaxName[]): readonly SyntaxName[] {
    const [first] = path;
    const alias = first && !first.quoted ? this.options.aliases?.[first.text] : undefined;
    if (alias === undefined || first === undefined) return path;
    return [...alias.split('.').map((text) => ({ text, quoted: false, column: first.column })), ...path.slice(1)];
  }

  private restriction(written: readonly SyntaxName[], comparator: Comparator, value: SyntaxValue): FilterCondition {
    const path = this.expandAlias(written);
    const writtenLabel = written.map((name) => name.text).join('.');
    const jsonPath: string[] = [];
    let message = this.schema;
    for (let i = 0; i < path.length; i++) {
      const name = path[i] as SyntaxName;
      const label = path
        .slice(0, i + 1)
        .map((segment) => segment.text)
        .join('.');
      const field = this.field(message, name, written === path ? label : writtenLabel);
      jsonPath.push(field.jsonName);
      const last = i === path.length - 1;
      const rest = path[i + 1];
      if (field.fieldKind === 'map') {
        const leaf: Leaf = {
          type: valueTypeOf(
            { fieldKind: 'map', scalar: field.scalar, message: field.message, enum: field.enum },
            field.mapKind === 'scalar' ? SCALAR_NAMES[field.scalar] : undefined,
          ),
          scalar: field.mapKind === 'scalar' ? SCALAR_NAMES[field.scalar] : undefined,
          enum: field.enum,
          label,
        };
        if (last) {
          if (comparator !== ':') throw new FilterError(`"${label}" is a map: use ${label}:<key> (has the key) or ${label}.<key> = <value>`, value.column);
          if (value.text === '*' && !value.quoted) return { kind: 'present', path: jsonPath, shape: 'map' };
          return { kind: 'has-key', path: jsonPath, key: value.text };
        }
        if (rest === undefined || i + 1 !== path.length - 1) {
          throw new FilterError(`"${label}" is a map: only one key may follow it`, path[i + 2]?.column ?? value.column);
        }
        if (comparator === ':' && value.text === '*' && !value.quoted) return { kind: 'present', path: jsonPath, key: rest.text, shape: 'map' };
        const { operator, literal } = this.compared(leaf, `${label}.${rest.text}`, comparator, value);
        return { kind: 'map-entry', path: jsonPath, key: rest.text, type: leaf.type as FilterValueType, operator, value: literal };
      }
      if (field.fieldKind === 'list') {
        if (!last) throw new FilterError(`"${label}" is a repeated field: fields inside its elements cannot be filtered on`, rest?.column);
        if (comparator !== ':') throw new FilterError(`"${label}" is a repeated field: use ${label}:<value> (holds the value)`, value.column);
        if (value.text === '*' && !value.quoted) return { kind: 'present', path: jsonPath, shape: 'list' };
        const scalar = field.listKind === 'scalar' ? SCALAR_NAMES[field.scalar] : undefined;
        const leaf: Leaf = { type: valueTypeOf({ fieldKind: 'list', message: field.message, enum: field.enum }, scalar), scalar, enum: field.enum, label };
        const { literal } = this.compared(leaf, label, '=', value);
        return { kind: 'contains', path: jsonPath, type: leaf.type as FilterValueType, value: literal };
      }
      const scalar = field.fieldKind === 'scalar' ? SCALAR_NAMES[field.scalar] : undefined;
      const type = valueTypeOf({ fieldKind: field.fieldKind, message: field.message, enum: field.enum }, scalar);
      if (field.fieldKind === 'message' && type === undefined) {
        if (!last) {
          message = field.message;
          continue;
        }
        if (comparator === ':' && value.text === '*' && !value.quoted) return { kind: 'present', path: jsonPath, shape: 'value' };
        throw new FilterError(`"${label}" is a message: compare one of its fields (${label}.<field>) or test it with ${label}:*`, value.column);
      }
      if (!last) throw new FilterError(`"${label}" has no fields`, rest?.column);
      if (comparator === ':' && value.text === '*' && !value.quoted) return { kind: 'present', path: jsonPath, shape: 'value' };
      const leaf: Leaf = { type, scalar, enum: field.fieldKind === 'enum' ? field.enum : undefined, label };
      const { operator, literal } = this.compared(leaf, label, comparator, value);
      return { kind: 'compare', path: jsonPath, type: type as FilterValueType, operator, value: literal };
    }
    throw new FilterError('expected a field name', value.column);
  }

  /** Checks a literal against the field's type (and the comparator against what the type orders by). */
  private compared(leaf: Leaf, label: string, comparator: Comparator, value: SyntaxValue): { operator: Operator; literal: string | boolean } {
    const operator: Operator = comparator === ':' ? '=' : comparator;
    const ordering = operator !== '=' && operator !== '!=';
    const mismatch = (expected: string): never => {
      throw new FilterError(`"${label}" is ${expected}; found ${value.quoted ? JSON.stringify(value.text) : value.text}`, value.column);
    };
    switch (leaf.type) {
      case undefined:
        throw new FilterError(`"${label}" cannot be compared (bytes or a message)`, value.column);
      case 'string':
        return { operator, literal: value.text };
      case 'bool':
        if (ordering) throw new FilterError(`"${label}" is a bool: only = and != compare it`, value.column);
        if (value.quoted || (value.text !== 'true' && value.text !== 'false')) mismatch('a bool (true or false)');
        return { operator, literal: value.text === 'true' };
      case 'enum': {
        if (ordering) throw new FilterError(`"${label}" is an enum: only = and != compare it`, value.column);
        const known = leaf.enum?.values.map((entry) => entry.name) ?? [];
        if (!known.includes(value.text)) mismatch(`an enum (one of ${known.join(', ')})`);
        return { operator, literal: value.text };
      }
      case 'number': {
        const integer = leaf.scalar !== undefined && INTEGER_TYPES.has(leaf.scalar);
        if (!(integer ? INTEGER : NUMBER).test(value.text)) mismatch(integer ? `an integer (${leaf.scalar})` : `a number (${leaf.scalar ?? 'number'})`);
        return { operator, literal: value.text };
      }
      case 'timestamp':
        if (!TIMESTAMP.test(value.text) || Number.isNaN(Date.parse(value.text))) mismatch('a timestamp (RFC 3339, quoted: "2026-01-01T00:00:00Z")');
        return { operator, literal: value.text };
      case 'duration': {
        const match = DURATION.exec(value.text);
        if (!match?.[1]) mismatch('a duration (seconds with an "s": "1.5s")');
        return { operator, literal: (match as RegExpExecArray)[1] as string };
      }
    }
  }
}

/**
 * Reads an AIP-160 filter (docs/cloud-api.md, "List filters") and checks it against a resource's
 * message: field paths by JSON name (`metadata.createdAt`) or proto name (`metadata.created_at`),
 * literals of the field's type, enum values by name as the JSON mapping spells them. Generic over
 * the descriptor; empty text → undefined (no filter). Throws FilterError naming the column.
 */
export function compileFilter(text: string, schema: DescMessage, options: FilterOptions = {}): Filter | undefined {
  const tree = parseFilter(text);
  return tree === undefined ? undefined : new Resolver(schema, options).resolve(tree);
}

/**
 * The conditions every match must meet: the top-level conjunction's conditions (all of them for
 * a single condition, none under OR or NOT). A store may use them to pick an index.
 */
export function requiredConditions(filter: Filter | undefined): FilterCondition[] {
  if (filter === undefined) return [];
  switch (filter.kind) {
    case 'and':
      return filter.terms.flatMap((term) => requiredConditions(term));
    case 'or':
    case 'not':
      return [];
    default:
      return [filter];
  }
}
