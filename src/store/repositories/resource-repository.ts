import type { Knex } from 'knex';
import type { Filter } from '../../engines/filter/index.js';
import { filteredList, type FilteredRows, type ResourceTable } from '../filtered-list.js';
import { pooledRead, type PooledStatement } from '../pool-fast-path/pooled-read.js';

/** A stored resource (instance, project, service account): the protobuf message plus lookup columns. */
export interface ResourceRow {
  id: string;
  seq: number;
  parent_id: string;
  name: string;
  resource_version: number;
  /** The whole resource message, protobuf binary. */
  data: Uint8Array;
}

/** What a write stores: the row and `doc`, the resource's JSON for filters (src/store/resource-document.ts). */
export type ResourceWrite<Row> = Row & { doc: string };

const COLUMNS = ['id', 'seq', 'parent_id', 'name', 'resource_version', 'data'] as const;

function normalize(row: Record<string, unknown>): ResourceRow {
  // One copy into a plain Uint8Array (pg answers a Buffer, PGlite a Uint8Array).
  return { ...(row as unknown as ResourceRow), data: new Uint8Array(row.data as Uint8Array) };
}

/**
 * SQL shared by the tables of named cloud resources (each resource kind's table: `compute_instances`,
 * `compute_disks`, `iam_projects`…): all have the same columns and the `(parent_id, name)` unique index.
 * Every method takes an optional transaction.
 */
export class ResourceRepository {
  /** The read behind every Get: plain SQL, `$1` on a pooled connection, `?` for Knex inside a transaction. */
  private readonly findByIdSql: { pooled: PooledStatement; knex: string };

  constructor(
    private readonly knex: Knex,
    readonly table: ResourceTable,
  ) {
    const sql = `SELECT ${COLUMNS.join(', ')} FROM ${table} WHERE id = `;
    this.findByIdSql = { pooled: { text: `${sql}$1` }, knex: `${sql}?` };
  }

  async findById(id: string, trx: Knex = this.knex): Promise<ResourceRow | undefined> {
    const rows =
      trx === this.knex
        ? await pooledRead<Record<string, unknown>>(this.knex, this.findByIdSql.pooled, [id])
        : (await trx.raw<QueryResult>(this.findByIdSql.knex, [id])).rows;
    const row = rows[0];
    return row ? normalize(row) : undefined;
  }

  /** Reads and locks the row until the transaction ends (mutations of one resource serialize here). */
  async lock(id: string, trx: Knex): Promise<ResourceRow | undefined> {
    const row = await trx(this.table).select(COLUMNS).where({ id }).forUpdate().first();
    return row ? normalize(row) : undefined;
  }

  /** Whether the row exists, holding a share lock until the transaction ends (a child being created blocks the parent's delete). */
  async existsShared(id: string, trx: Knex): Promise<boolean> {
    const row = await trx(this.table).select('id').where({ id }).forShare().first();
    return row !== undefined;
  }

  async findByName(parentId: string, name: string, trx: Knex = this.knex): Promise<ResourceRow | undefined> {
    const row = await trx(this.table).select(COLUMNS).where({ parent_id: parentId, name }).first();
    return row ? normalize(row) : undefined;
  }

  /** Oldest first, after `afterSeq`; `ids` narrows the list (a service account sees only its own project). */
  async list(parentId: string, afterSeq: number | undefined, limit: number, trx: Knex = this.knex, ids?: readonly string[]): Promise<ResourceRow[]> {
    const builder = trx(this.table).select(COLUMNS).where({ parent_id: parentId }).orderBy('seq').limit(limit);
    if (afterSeq !== undefined) builder.where('seq', '>', afterSeq);
    if (ids !== undefined) builder.whereIn('id', [...ids]);
    return (await builder).map(normalize);
  }

  /**
   * One page of a parent's resources matching `filter`, examining at most `scanRows` of them
   * (src/store/filtered-list.ts); `ids` narrows the list as in `list`.
   */
  async listFiltered(
    query: { parentId: string; afterSeq: number | undefined; limit: number; filter: Filter; scanRows: number; ids?: readonly string[] },
    trx: Knex = this.knex,
  ): Promise<{ rows: ResourceRow[]; resumeAfter: FilteredRows['resumeAfter'] }> {
    const { rows, resumeAfter } = await filteredList(trx, { ...query, table: this.table, columns: COLUMNS });
    return { rows: rows.map(normalize), resumeAfter };
  }

  /**
   * How many resources the parent holds, counting no further than `atMost` when given: a quota
   * check reads at most `quota` index entries whatever the parent holds.
   */
  async countByParent(parentId: string, trx: Knex = this.knex, atMost?: number): Promise<number> {
    const matching = trx(this.table).select('id').where({ parent_id: parentId });
    if (atMost !== undefined) matching.limit(atMost);
    const row = await trx.from(matching.as('matching')).count<{ count: number }[]>({ count: '*' }).first();
    return Number(row?.count ?? 0);
  }

  /** Serializes creations under one parent (quota and name checks) across processes. */
  async lockParent(parentId: string, trx: Knex): Promise<void> {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`${this.table}:${parentId}`]);
  }

  async insert(row: ResourceWrite<Omit<ResourceRow, 'seq'>>, trx: Knex = this.knex): Promise<void> {
    await trx(this.table).insert({ ...row, data: Buffer.from(row.data) });
  }

  async update(row: ResourceWrite<Omit<ResourceRow, 'seq' | 'parent_id'>>, trx: Knex = this.knex): Promise<void> {
    await trx(this.table)
      .where({ id: row.id })
      .update({ name: row.name, resource_version: row.resource_version, data: Buffer.from(row.data), doc: row.doc, updated_at: trx.fn.now() });
  }

  async delete(id: string, trx: Knex = this.knex): Promise<void> {
    await trx(this.table).where({ id }).delete();
  }
}

interface QueryResult {
  rows: Record<string, unknown>[];
}
