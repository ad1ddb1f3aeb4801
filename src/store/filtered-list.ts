import type { Knex } from 'knex';
import { requiredConditions, type Filter, type FilterCondition, type FilterValueType, type Operator } from '../engines/filter/index.js';

/** The table of a cloud resource kind (src/services/cloud/resource-kind.ts): each has `id`, `seq`, `parent_id` and `doc` (src/store/resource-document.ts). */
export type ResourceTable = string;

/** How many rows one filtered page may examine unless configured (LIST_FILTER_SCAN_ROWS). */
export const DEFAULT_LIST_SCAN_ROWS = 10_000;

/** Field names come from the message descriptor, never from the filter text; checked again before they reach SQL. */
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SQL_OPERATORS: Record<Operator, string> = { '=': '=', '!=': '<>', '<': '<', '<=': '<=', '>': '>', '>=': '>=' };

interface Sql {
  sql: string;
  bindings: Array<string | number | boolean>;
}

function pathLiteral(path: readonly string[]): string {
  for (const name of path) if (!FIELD_NAME.test(name)) throw new Error(`not a field name: ${JSON.stringify(name)}`);
  return `'{${path.join(',')}}'`;
}

/** `expression op value` for a value of `type` (the expression yields the JSON value as text). */
function compared(expression: string, type: FilterValueType, operator: Operator, value: string | boolean): Sql {
  const op = SQL_OPERATORS[operator];
  switch (type) {
    case 'string':
    case 'enum':
      // Equality as written (so the state index's expression matches); ordering by code point, whatever the database's collation.
      return operator === '=' || operator === '!='
        ? { sql: `${expression} ${op} ?`, bindings: [String(value)] }
        : { sql: `${expression} COLLATE "C" ${op} ?`, bindings: [String(value)] };
    case 'bool':
      return { sql: `${expression} ${op} ?`, bindings: [String(value)] };
    case 'number':
      return { sql: `(${expression})::numeric ${op} ?::numeric`, bindings: [String(value)] };
    case 'timestamp':
      return { sql: `(${expression})::timestamptz ${op} ?::timestamptz`, bindings: [String(value)] };
    case 'duration':
      return { sql: `rtrim(${expression}, 's')::numeric ${op} ?::numeric`, bindings: [String(value)] };
  }
}

/**
 * Where a filter's fields are read: the JSON column `column` (a stored resource's `doc`), or a
 * table's own columns (`fields`: a field path, dotted, to an SQL expression over the row that is
 * NULL when the field is unset; a path not there is refused).
 */
type FieldSource = { kind: 'json'; column: string } | { kind: 'columns'; fields: Readonly<Record<string, string>> };

function columnOf(source: { fields: Readonly<Record<string, string>> }, path: readonly string[]): string {
  const expression = source.fields[path.join('.')];
  if (expression === undefined) throw new Error(`no column for the field ${JSON.stringify(path.join('.'))}`);
  return expression;
}

/**
 * A condition as SQL over `source`, never NULL: an absent field (a missing label, an unset
 * timestamp) fails every comparison but `!=`, which reads as NOT `=` (AIP-160: `a != b` is `NOT a = b`).
 */
function conditionSql(condition: FilterCondition, source: FieldSource): Sql {
  if ((condition.kind === 'compare' || condition.kind === 'map-entry') && condition.operator === '!=') {
    const equal = conditionSql({ ...condition, operator: '=' }, source);
    return { sql: `(NOT ${equal.sql})`, bindings: equal.bindings };
  }
  if (source.kind === 'columns') {
    const column = columnOf(source, condition.path);
    let inner: Sql;
    if (condition.kind === 'compare') inner = compared(column, condition.type, condition.operator, condition.value);
    else if (condition.kind === 'present' && condition.shape === 'value') inner = { sql: `${column} IS NOT NULL`, bindings: [] };
    else throw new Error(`a ${condition.kind} condition cannot read the column of ${JSON.stringify(condition.path.join('.'))}`);
    return { sql: `coalesce((${inner.sql}), false)`, bindings: inner.bindings };
  }
  const column = source.column;
  const json = `(${column} #> ${pathLiteral(condition.path)})`;
  const text = `(${column} #>> ${pathLiteral(condition.path)})`;
  let inner: Sql;
  switch (condition.kind) {
    case 'compare':
      inner = compared(text, condition.type, condition.operator, condition.value);
      break;
    case 'map-entry': {
      const entry = compared(`(${json} ->> ?)`, condition.type, condition.operator, condition.value);
      inner = { sql: entry.sql, bindings: [condition.key, ...entry.bindings] };
      break;
    }
    case 'has-key':
      inner = { sql: `jsonb_exists(${json}, ?)`, bindings: [condition.key] };
      break;
    case 'contains': {
      const element = compared('element', condition.type, '=', condition.value);
      inner = {
        sql: `jsonb_typeof(${json}) = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(${json}) AS elements (element) WHERE ${element.sql})`,
        bindings: element.bindings,
      };
      break;
    }
    case 'present':
      if (condition.key !== undefined) inner = { sql: `jsonb_exists(${json}, ?)`, bindings: [condition.key] };
      else if (condition.shape === 'list') inner = { sql: `jsonb_typeof(${json}) = 'array' AND jsonb_array_length(${json}) > 0`, bindings: [] };
      else if (condition.shape === 'map') inner = { sql: `jsonb_typeof(${json}) = 'object' AND ${json} <> '{}'::jsonb`, bindings: [] };
      else inner = { sql: `jsonb_typeof(${json}) <> 'null'`, bindings: [] };
      break;
  }
  return { sql: `coalesce((${inner.sql}), false)`, bindings: inner.bindings };
}

/** The whole filter as one SQL predicate over `source`; values only as bindings. */
function predicateSql(filter: Filter, source: FieldSource): Sql {
  switch (filter.kind) {
    case 'and':
    case 'or': {
      const parts = filter.terms.map((term) => predicateSql(term, source));
      return { sql: `(${parts.map((part) => part.sql).join(filter.kind === 'and' ? ' AND ' : ' OR ')})`, bindings: parts.flatMap((part) => part.bindings) };
    }
    case 'not': {
      const inner = predicateSql(filter.term, source);
      return { sql: `(NOT ${inner.sql})`, bindings: inner.bindings };
    }
    default:
      return conditionSql(filter, source);
  }
}

function filterSql(filter: Filter, column: string): Sql {
  return predicateSql(filter, { kind: 'json', column });
}

/**
 * A filter as one SQL predicate over a table's own columns (the operations table): `fields` maps
 * each filterable field path (dotted JSON names, e.g. `status.code`) to an SQL expression over the
 * row, NULL when the field is unset. Only comparisons and `field:*` reach columns; the filter's
 * schema must hide every other field. Values only as bindings.
 */
export function columnFilterSql(filter: Filter, fields: Readonly<Record<string, string>>): Sql {
  return predicateSql(filter, { kind: 'columns', fields });
}

/**
 * Where a filtered page's candidate rows come from, in `seq` order: the rows carrying one label
 * (`cloud_resource_labels`), the instances in one state (`compute_instances_state`), or every row
 * of the parent. Only conditions that every match meets may narrow the candidates.
 */
type Driver = { kind: 'labels'; key: string; value?: string } | { kind: 'state'; state: string } | { kind: 'parent' };

function isLabels(path: readonly string[]): boolean {
  return path.length === 2 && path[0] === 'metadata' && path[1] === 'labels';
}

function driverOf(table: ResourceTable, filter: Filter | undefined): Driver {
  const required = requiredConditions(filter);
  for (const condition of required) {
    if (condition.kind === 'map-entry' && isLabels(condition.path) && condition.operator === '=' && condition.type === 'string') {
      return { kind: 'labels', key: condition.key, value: String(condition.value) };
    }
  }
  for (const condition of required) {
    if ((condition.kind === 'has-key' || (condition.kind === 'present' && condition.key !== undefined)) && isLabels(condition.path)) {
      return { kind: 'labels', key: condition.key as string };
    }
  }
  if (table === 'compute_instances') {
    for (const condition of required) {
      if (condition.kind === 'compare' && condition.operator === '=' && condition.path.join('.') === 'status.state')
        return { kind: 'state', state: String(condition.value) };
    }
  }
  return { kind: 'parent' };
}

export interface FilteredListQuery {
  table: ResourceTable;
  /** The columns each row is answered with; `seq` among them. */
  columns: readonly string[];
  parentId: string;
  afterSeq: number | undefined;
  /** Rows wanted (a page and one more). */
  limit: number;
  filter: Filter | undefined;
  /** At most this many candidate rows are examined. */
  scanRows: number;
  /** Narrows the candidates (more equalities on plain columns), e.g. `{ service_account_id }`. */
  where?: Readonly<Record<string, string>>;
  /** Narrows the candidates to these ids. */
  ids?: readonly string[];
}

export interface FilteredRows {
  rows: Array<Record<string, unknown>>;
  /**
   * Set when the page is short because `scanRows` candidates were examined: the `seq` of the last
   * one, where the next page resumes (the rows up to it are done with, matched or not).
   */
  resumeAfter: number | undefined;
}

/**
 * One keyset page of a parent's rows that match `filter` (docs/cloud-api.md, "List filters"): the
 * candidates (see Driver) from the cursor on in `seq` order, at most `scanRows` of them, then the
 * filter over those, `limit` rows at most. A page that examined `scanRows` candidates without
 * filling up says where the walk stopped, so the caller can answer a short page with a token
 * instead of walking on: no page reads more than `scanRows` rows whatever the filter.
 */
export async function filteredList(knex: Knex, query: FilteredListQuery): Promise<FilteredRows> {
  const driver = driverOf(query.table, query.filter);
  const narrowResources = (builder: Knex.QueryBuilder, alias: string): Knex.QueryBuilder => {
    for (const [column, value] of Object.entries(query.where ?? {})) builder.where(`${alias}.${column}`, value);
    if (query.ids !== undefined) builder.whereIn(`${alias}.id`, [...query.ids]);
    return builder;
  };
  // The candidates in `seq` order, as `seq` and the resource id (what the bound counts and the cut reads).
  const walk = (): Knex.QueryBuilder => {
    let builder: Knex.QueryBuilder;
    if (driver.kind === 'labels') {
      builder = knex({ walked: 'cloud_resource_labels' }).where({
        'walked.resource_table': query.table,
        'walked.parent_id': query.parentId,
        'walked.key': driver.key,
      });
      if (driver.value !== undefined) builder.where('walked.value', driver.value);
    } else {
      builder = narrowResources(knex({ walked: query.table }).where('walked.parent_id', query.parentId), 'walked');
      if (driver.kind === 'state') builder.whereRaw(`(walked.doc #>> '{status,state}') = ?`, [driver.state]);
    }
    if (query.afterSeq !== undefined) builder.where('walked.seq', '>', query.afterSeq);
    return builder.orderBy('walked.seq');
  };
  const columns = query.columns.filter((column) => column !== 'seq');
  let scanned: Knex.QueryBuilder;
  if (driver.kind === 'labels') {
    // Each label row fetches its resource by id, in the label rows' order: a page reads as many
    // label entries and resources as it needs, never the label's every row (a hash join would).
    const labels = walk().select({ seq: 'walked.seq', resource_id: 'walked.resource_id' }).limit(query.scanRows);
    // LIMIT 1 (ids are unique) keeps the planner from turning the per-row lookup into a join of all rows.
    const resource = narrowResources(
      knex({ resource: query.table })
        .select([...columns, 'doc'])
        .whereRaw('resource.id = labels.resource_id'),
      'resource',
    )
      .limit(1)
      .toSQL();
    scanned = knex
      .from(labels.as('labels'))
      .joinRaw(`CROSS JOIN LATERAL (${resource.sql}) AS resource`, [...resource.bindings])
      .select(['labels.seq', ...columns.map((column) => `resource.${column}`), 'resource.doc'])
      .orderBy('labels.seq');
  } else {
    scanned = walk()
      .select(['walked.seq', ...columns.map((column) => `walked.${column}`), 'walked.doc'])
      .limit(query.scanRows);
  }
  const matching = knex.from(scanned.as('candidates')).select(query.columns.map((column) => `candidates.${column}`));
  if (query.filter !== undefined) {
    const predicate = filterSql(query.filter, 'candidates.doc');
    matching.whereRaw(predicate.sql, predicate.bindings);
  }
  const rows = (await matching.orderBy('candidates.seq').limit(query.limit)) as Array<Record<string, unknown>>;
  if (rows.length >= query.limit) return { rows, resumeAfter: undefined };
  const cut = (await walk()
    .select({ seq: 'walked.seq' })
    .offset(query.scanRows - 1)
    .limit(1)
    .first()) as { seq: string | number } | undefined;
  return { rows, resumeAfter: cut === undefined ? undefined : Number(cut.seq) };
}
