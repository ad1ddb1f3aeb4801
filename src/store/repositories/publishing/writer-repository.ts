import type { Knex } from 'knex';
import type { components } from '../../../../generated/openapi/publishing.js';
import { isObjectId, newObjectId } from './object-id.js';
import { printTimestamp } from './sort-key.js';

/** The publishing contract's `Role`. */
export type PublishingRole = components['schemas']['Role'];

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
/** What a listing or a batch load shows of a user: everything but the password hash, which stays in the store. */
const PUBLIC_COLUMNS = COLUMNS.filter((column) => column !== 'password_hash');

/** A user as lists and batch loads read it (no password hash). */
export type ListedUserRow = Omit<PublishingUserRow, 'password_hash'>;

/** SQL for publishing users (writers, editors, superusers, readers); methods take an optional transaction. */
export class WriterRepository {
  constructor(private readonly knex: Knex) {}

  async findById(id: string, trx: Knex = this.knex): Promise<PublishingUserRow | undefined> {
    if (!isObjectId(id)) return undefined;
    return trx('publishing_users').select(COLUMNS).where({ id }).first();
  }

  /** One round trip for many ids (the GraphQL loaders batch through here). */
  async findByIds(ids: readonly string[], trx: Knex = this.knex): Promise<ListedUserRow[]> {
    const valid = [...new Set(ids.filter(isObjectId))];
    if (valid.length === 0) return [];
    return trx('publishing_users').select(PUBLIC_COLUMNS).whereIn('id', valid);
  }

  async findByEmail(email: string, trx: Knex = this.knex): Promise<PublishingUserRow | undefined> {
    return trx('publishing_users').select(COLUMNS).whereRaw('lower(email) = lower(?)', [email]).first();
  }

  /**
   * A page of users with the given roles, oldest first (createdAt, then id), after a position or an
   * offset; `sort_key` is createdAt printed for cursors. The index on (created_at, id) walks this order.
   */
  async list(
    roles: readonly PublishingRole[],
    page: { take: number; offset: number; after?: { key: string; id: string } | undefined },
    trx: Knex = this.knex,
  ): Promise<Array<ListedUserRow & { sort_key: string }>> {
    const query = trx('publishing_users')
      .select([...PUBLIC_COLUMNS, trx.raw(`${printTimestamp('created_at')} AS sort_key`)])
      .whereIn('role', roles);
    if (page.after) query.whereRaw('(created_at, id) > (?::timestamptz, ?)', [page.after.key, page.after.id]);
    return query
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .limit(page.take)
      .offset(page.offset);
  }

  /** How many users have the given roles, counting no further than `bound` rows. */
  async count(roles: readonly PublishingRole[], bound: number, trx: Knex = this.knex): Promise<number> {
    const matching = trx('publishing_users').select(trx.raw('1')).whereIn('role', roles).limit(bound);
    const row = await trx.from(matching.as('matching')).count<{ n: number }[]>('* as n').first();
    return Number(row?.n ?? 0);
  }

  async insert(row: Omit<PublishingUserRow, 'id' | 'created_at' | 'modified_at'>, trx: Knex = this.knex): Promise<PublishingUserRow> {
    const [created] = await trx('publishing_users')
      .insert({ ...row, id: newObjectId() })
      .returning(COLUMNS);
    return created as PublishingUserRow;
  }
}
