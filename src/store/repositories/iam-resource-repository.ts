import type { Knex } from 'knex';

/** A stored IAM resource (project or service account): the protobuf message plus lookup columns. */
export interface IamResourceRow {
  id: string;
  seq: number;
  parent_id: string;
  name: string;
  resource_version: number;
  /** The whole resource message, protobuf binary. */
  data: Uint8Array;
}

const COLUMNS = ['id', 'seq', 'parent_id', 'name', 'resource_version', 'data'] as const;

function normalize(row: Record<string, unknown>): IamResourceRow {
  return { ...(row as unknown as IamResourceRow), data: new Uint8Array(Buffer.from(row.data as Uint8Array)) };
}

/**
 * SQL shared by the tables of named IAM resources (`iam_projects`, `iam_service_accounts`): both
 * have the same columns and the `(parent_id, name)` unique index.
 */
export class IamResourceRepository {
  constructor(
    private readonly knex: Knex,
    readonly table: 'iam_projects' | 'iam_service_accounts',
  ) {}

  async findById(id: string, trx: Knex = this.knex): Promise<IamResourceRow | undefined> {
    const row = await trx(this.table).select(COLUMNS).where({ id }).first();
    return row ? normalize(row) : undefined;
  }

  /** Reads and locks the row until the transaction ends (mutations of one resource serialize here). */
  async lock(id: string, trx: Knex): Promise<IamResourceRow | undefined> {
    const row = await trx(this.table).select(COLUMNS).where({ id }).forUpdate().first();
    return row ? normalize(row) : undefined;
  }

  /** Whether the row exists, holding a share lock until the transaction ends (a child being created blocks the parent's delete). */
  async existsShared(id: string, trx: Knex): Promise<boolean> {
    const row = await trx(this.table).select('id').where({ id }).forShare().first();
    return row !== undefined;
  }

  async findByName(parentId: string, name: string, trx: Knex = this.knex): Promise<IamResourceRow | undefined> {
    const row = await trx(this.table).select(COLUMNS).where({ parent_id: parentId, name }).first();
    return row ? normalize(row) : undefined;
  }

  /** Oldest first, after `afterSeq`; `ids` narrows the list (a service account sees only its own project). */
  async list(parentId: string, afterSeq: number | undefined, limit: number, trx: Knex = this.knex, ids?: readonly string[]): Promise<IamResourceRow[]> {
    const builder = trx(this.table).select(COLUMNS).where({ parent_id: parentId }).orderBy('seq').limit(limit);
    if (afterSeq !== undefined) builder.where('seq', '>', afterSeq);
    if (ids !== undefined) builder.whereIn('id', [...ids]);
    return (await builder).map(normalize);
  }

  async countByParent(parentId: string, trx: Knex = this.knex): Promise<number> {
    const row = await trx(this.table).where({ parent_id: parentId }).count<{ count: number }[]>({ count: '*' }).first();
    return Number(row?.count ?? 0);
  }

  async insert(row: Omit<IamResourceRow, 'seq'>, trx: Knex = this.knex): Promise<void> {
    await trx(this.table).insert({ ...row, data: Buffer.from(row.data) });
  }

  async update(row: Omit<IamResourceRow, 'seq' | 'parent_id'>, trx: Knex = this.knex): Promise<void> {
    await trx(this.table)
      .where({ id: row.id })
      .update({ name: row.name, resource_version: row.resource_version, data: Buffer.from(row.data), updated_at: trx.fn.now() });
  }

  async delete(id: string, trx: Knex = this.knex): Promise<void> {
    await trx(this.table).where({ id }).delete();
  }
}

/** The installation's single tenant. */
export class TenantRepository {
  constructor(private readonly knex: Knex) {}

  /** Inserts the tenant unless one exists; true when this call made it (the first start). */
  async insertIfNone(id: string, trx: Knex = this.knex): Promise<boolean> {
    const inserted = await trx('iam_tenants').insert({ id, singleton: true }).onConflict('singleton').ignore().returning('id');
    return inserted.length > 0;
  }

  async get(trx: Knex = this.knex): Promise<string | undefined> {
    const row = await trx('iam_tenants').select('id').first();
    return row?.id as string | undefined;
  }
}
