import type { Knex } from 'knex';
import { affectedRows } from '../affected-rows.js';
import { pooledRead, type PooledStatement } from '../pooled-read.js';
import type { components } from '../../../generated/openapi/users.js';

export type Settings = components['schemas']['Settings'];

export interface UserRow {
  id: string;
  name: string;
  password_hash: string;
  is_admin: boolean;
  onboarding_done: boolean;
  profile_picture: string;
  settings: Settings;
}

const COLUMNS = ['id', 'name', 'password_hash', 'is_admin', 'onboarding_done', 'profile_picture', 'settings'] as const;
const FIND_BY_IDS = `SELECT ${COLUMNS.join(', ')} FROM users WHERE id = ANY(?::uuid[])`;
/** The pooled reads of `findByIds` (named: prepared once per connection); one id needs no array for PostgreSQL to decode and scan. */
const FIND_BY_IDS_POOLED: PooledStatement = { name: 'users.findByIds', text: `SELECT ${COLUMNS.join(', ')} FROM users WHERE id = ANY($1::uuid[])` };
const FIND_BY_ID_POOLED: PooledStatement = { name: 'users.findById', text: `SELECT ${COLUMNS.join(', ')} FROM users WHERE id = $1::uuid` };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** SQL for user accounts; every method takes an optional transaction. */
export class UserRepository {
  constructor(private readonly knex: Knex) {}

  /** Finds users by id in one round trip; ids that are not UUIDs simply match nothing. */
  findByIds(ids: string[], trx: Knex = this.knex): Promise<UserRow[]> {
    const valid = ids.filter((id) => UUID.test(id));
    if (valid.length === 0) return Promise.resolve([]);
    // The hottest read of the API (every GET /api/users/{id}, every user principal): a named statement
    // on a connection of knex's own pool (PostgreSQL's backend shares the server's cores; re-parsing
    // the SQL per request was its largest cost). A transaction's reads stay on its connection.
    if (trx !== this.knex) return trx.raw<{ rows: UserRow[] }>(FIND_BY_IDS, [valid]).then(({ rows }) => rows);
    return valid.length === 1 ? pooledRead<UserRow>(this.knex, FIND_BY_ID_POOLED, valid) : pooledRead<UserRow>(this.knex, FIND_BY_IDS_POOLED, [valid]);
  }

  async findById(id: string, trx: Knex = this.knex): Promise<UserRow | undefined> {
    if (!UUID.test(id)) return undefined;
    return trx('users').select(COLUMNS).where({ id }).first();
  }

  async findByName(name: string, trx: Knex = this.knex): Promise<UserRow | undefined> {
    return trx('users').select(COLUMNS).where({ name }).first();
  }

  /** A user whose name is the same once trimmed, NFKC-normalised and case-folded (`folded` is already so). */
  async findByFoldedName(folded: string, trx: Knex = this.knex): Promise<UserRow | undefined> {
    return trx('users').select(COLUMNS).whereRaw('lower(btrim(normalize(name, NFKC))) = ?', [folded]).first();
  }

  async list(trx: Knex = this.knex): Promise<UserRow[]> {
    return trx('users')
      .select(COLUMNS)
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
  }

  async insert(row: Omit<UserRow, 'id'>, trx: Knex = this.knex): Promise<UserRow> {
    const [created] = await trx('users')
      .insert({ ...row, settings: JSON.stringify(row.settings) })
      .returning(COLUMNS);
    return created as UserRow;
  }

  async update(id: string, patch: Partial<Omit<UserRow, 'id'>>, trx: Knex = this.knex): Promise<UserRow | undefined> {
    const values: Record<string, unknown> = { ...patch, updated_at: trx.fn.now() };
    if (patch.settings) values.settings = JSON.stringify(patch.settings);
    const [updated] = await trx('users').where({ id }).update(values).returning(COLUMNS);
    return updated as UserRow | undefined;
  }

  async delete(id: string, trx: Knex = this.knex): Promise<boolean> {
    return affectedRows(await trx('users').where({ id }).delete()) > 0;
  }

  async countAdmins(trx: Knex = this.knex): Promise<number> {
    const row = await trx('users').where({ is_admin: true }).count<{ n: number }[]>('* as n').first();
    return Number(row?.n ?? 0);
  }

  /**
   * Serialises the rules that depend on how many admins exist (bootstrap, last admin) across
   * concurrent requests and processes, for the rest of the transaction.
   */
  async lockAdmins(trx: Knex): Promise<void> {
    await trx.raw("SELECT pg_advisory_xact_lock(hashtext('users.admins'))");
  }
}
