import type { Knex } from 'knex';

export interface InstanceRow {
  id: string;
  seq: number;
  parent_id: string;
  name: string;
  resource_version: number;
  /** The `cloud.compute.v1.Instance`, protobuf binary. */
  data: Uint8Array;
}

const COLUMNS = ['id', 'seq', 'parent_id', 'name', 'resource_version', 'data'] as const;

function normalize(row: Record<string, unknown>): InstanceRow {
  return { ...(row as unknown as InstanceRow), data: new Uint8Array(Buffer.from(row.data as Uint8Array)) };
}

/** SQL for compute instances; every method takes an optional transaction. */
export class InstanceRepository {
  constructor(private readonly knex: Knex) {}

  async findById(id: string, trx: Knex = this.knex): Promise<InstanceRow | undefined> {
    const row = await trx('compute_instances').select(COLUMNS).where({ id }).first();
    return row ? normalize(row) : undefined;
  }

  /** Reads and locks the row until the transaction ends (mutations of one instance serialize here). */
  async lock(id: string, trx: Knex): Promise<InstanceRow | undefined> {
    const row = await trx('compute_instances').select(COLUMNS).where({ id }).forUpdate().first();
    return row ? normalize(row) : undefined;
  }

  async findByName(parentId: string, name: string, trx: Knex = this.knex): Promise<InstanceRow | undefined> {
    const row = await trx('compute_instances').select(COLUMNS).where({ parent_id: parentId, name }).first();
    return row ? normalize(row) : undefined;
  }

  /** Oldest first, after `afterSeq`. */
  async list(parentId: string, afterSeq: number | undefined, limit: number, trx: Knex = this.knex): Promise<InstanceRow[]> {
    const builder = trx('compute_instances').select(COLUMNS).where({ parent_id: parentId }).orderBy('seq').limit(limit);
    if (afterSeq !== undefined) builder.where('seq', '>', afterSeq);
    return (await builder).map(normalize);
  }

  async countByParent(parentId: string, trx: Knex = this.knex): Promise<number> {
    const row = await trx('compute_instances').where({ parent_id: parentId }).count<{ count: number }[]>({ count: '*' }).first();
    return Number(row?.count ?? 0);
  }

  /** Serializes creations under one parent (quota and name checks) across processes. */
  async lockParent(parentId: string, trx: Knex): Promise<void> {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`compute_instances:${parentId}`]);
  }

  async insert(row: Omit<InstanceRow, 'seq'>, trx: Knex = this.knex): Promise<void> {
    await trx('compute_instances').insert({ ...row, data: Buffer.from(row.data) });
  }

  async update(row: Omit<InstanceRow, 'seq' | 'parent_id'>, trx: Knex = this.knex): Promise<void> {
    await trx('compute_instances')
      .where({ id: row.id })
      .update({ name: row.name, resource_version: row.resource_version, data: Buffer.from(row.data), updated_at: trx.fn.now() });
  }

  async delete(id: string, trx: Knex = this.knex): Promise<void> {
    await trx('compute_instances').where({ id }).delete();
  }
}
