import type { Knex } from 'knex';
import { isObjectId, newObjectId } from './object-id.js';

export type PublishingRole = 'superuser' | 'editor' | 'writer' | 'reader';

export interface PublishingUserRow {
  id: string;
  email: string;
  password_hash: string;
  name: string;
  profile_image_url: string | null;
  role: PublishingRole;
  created_at: Date;
  modified_at: Date;
}

const COLUMNS = ['id', 'email', 'password_hash', 'name', 'profile_image_url', 'role', 'created_at', 'modified_at'] as const;

/** SQL for publishing users (writers, editors, superusers, readers); methods take an optional transaction. */
export class WriterRepository {
  constructor(private readonly knex: Knex) {}

  async findById(id: string, trx: Knex = this.knex): Promise<PublishingUserRow | undefined> {
    if (!isObjectId(id)) return undefined;
    return trx('publishing_users').select(COLUMNS).where({ id }).first();
  }

  /** One round trip for many ids (the GraphQL loaders batch through here). */
  async findByIds(ids: readonly string[], trx: Knex = this.knex): Promise<PublishingUserRow[]> {
    const valid = [...new Set(ids.filter(isObjectId))];
    if (valid.length === 0) return [];
    return trx('publishing_users').select(COLUMNS).whereIn('id', valid);
  }

  async findByEmail(email: string, trx: Knex = this.knex): Promise<PublishingUserRow | undefined> {
    return trx('publishing_users').select(COLUMNS).whereRaw('lower(email) = lower(?)', [email]).first();
  }

  /** A page of users with the given roles, oldest first, and how many there are in all. */
  async list(roles: readonly PublishingRole[], limit: number, offset: number, trx: Knex = this.knex): Promise<{ rows: PublishingUserRow[]; total: number }> {
    const rows: Array<PublishingUserRow & { total: number }> = await trx('publishing_users')
      .select([...COLUMNS, trx.raw('count(*) OVER () AS total')])
      .whereIn('role', roles)
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .limit(limit)
      .offset(offset);
    const total = rows[0]?.total ?? (offset > 0 ? await this.count(roles, trx) : 0);
    return { rows, total };
  }

  async count(roles: readonly PublishingRole[], trx: Knex = this.knex): Promise<number> {
    const row = await trx('publishing_users').whereIn('role', roles).count<{ n: number }[]>('* as n').first();
    return Number(row?.n ?? 0);
  }

  async insert(row: Omit<PublishingUserRow, 'id' | 'created_at' | 'modified_at'>, trx: Knex = this.knex): Promise<PublishingUserRow> {
    const [created] = await trx('publishing_users')
      .insert({ ...row, id: newObjectId() })
      .returning(COLUMNS);
    return created as PublishingUserRow;
  }
}
