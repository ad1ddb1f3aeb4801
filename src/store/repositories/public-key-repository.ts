import type { Knex } from 'knex';
import type { Filter } from '../../engines/filter/index.js';
import { filteredList, type FilteredRows } from '../filtered-list.js';
import type { ResourceWrite } from './resource-repository.js';

/** A stored service-account public key. */
export interface PublicKeyRow {
  id: string;
  seq: number;
  parent_id: string;
  service_account_id: string;
  fingerprint: string;
  active: boolean;
  expires_at: Date | null;
  public_key_pem: string;
  resource_version: number;
  /** The whole `cloud.iam.v1.AuthPublicKey`, protobuf binary. */
  data: Uint8Array;
}

const COLUMNS = ['id', 'seq', 'parent_id', 'service_account_id', 'fingerprint', 'active', 'expires_at', 'public_key_pem', 'resource_version', 'data'] as const;

function normalize(row: Record<string, unknown>): PublicKeyRow {
  return {
    ...(row as unknown as PublicKeyRow),
    expires_at: row.expires_at ? new Date(row.expires_at as string | Date) : null,
    data: new Uint8Array(Buffer.from(row.data as Uint8Array)),
  };
}

/** SQL for service-account public keys; every method takes an optional transaction. */
export class PublicKeyRepository {
  constructor(private readonly knex: Knex) {}

  async findById(id: string, trx: Knex = this.knex): Promise<PublicKeyRow | undefined> {
    const row = await trx('iam_public_keys').select(COLUMNS).where({ id }).first();
    return row ? normalize(row) : undefined;
  }

  async lock(id: string, trx: Knex): Promise<PublicKeyRow | undefined> {
    const row = await trx('iam_public_keys').select(COLUMNS).where({ id }).forUpdate().first();
    return row ? normalize(row) : undefined;
  }

  /** Oldest first, after `afterSeq`, optionally of one service account. */
  async list(
    parentId: string,
    serviceAccountId: string | undefined,
    afterSeq: number | undefined,
    limit: number,
    trx: Knex = this.knex,
  ): Promise<PublicKeyRow[]> {
    const builder = trx('iam_public_keys').select(COLUMNS).where({ parent_id: parentId }).orderBy('seq').limit(limit);
    if (serviceAccountId !== undefined) builder.where({ service_account_id: serviceAccountId });
    if (afterSeq !== undefined) builder.where('seq', '>', afterSeq);
    return (await builder).map(normalize);
  }

  /** A filtered page of a project's keys (src/store/filtered-list.ts), optionally of one service account. */
  async listFiltered(
    query: { parentId: string; serviceAccountId: string | undefined; afterSeq: number | undefined; limit: number; filter: Filter; scanRows: number },
    trx: Knex = this.knex,
  ): Promise<{ rows: PublicKeyRow[]; resumeAfter: FilteredRows['resumeAfter'] }> {
    const { serviceAccountId, ...rest } = query;
    const { rows, resumeAfter } = await filteredList(trx, {
      ...rest,
      table: 'iam_public_keys',
      columns: COLUMNS,
      ...(serviceAccountId === undefined ? {} : { where: { service_account_id: serviceAccountId } }),
    });
    return { rows: rows.map(normalize), resumeAfter };
  }

  async insert(row: ResourceWrite<Omit<PublicKeyRow, 'seq'>>, trx: Knex = this.knex): Promise<void> {
    await trx('iam_public_keys').insert({ ...row, data: Buffer.from(row.data) });
  }

  async update(row: ResourceWrite<Pick<PublicKeyRow, 'id' | 'active' | 'resource_version' | 'data'>>, trx: Knex = this.knex): Promise<void> {
    await trx('iam_public_keys')
      .where({ id: row.id })
      .update({ active: row.active, resource_version: row.resource_version, data: Buffer.from(row.data), doc: row.doc, updated_at: trx.fn.now() });
  }

  async delete(id: string, trx: Knex = this.knex): Promise<void> {
    await trx('iam_public_keys').where({ id }).delete();
  }
}
