import type { Knex } from 'knex';
import { foldUserName } from '../../auth/user-name.js';
import { affectedRows } from '../affected-rows.js';
import { pooledRead, type PooledStatement } from '../pool-fast-path/pooled-read.js';
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

/** A user as a listing reads it: never the password hash. */
export type UserListRow = Omit<UserRow, 'password_hash'>;

/**
 * Where a page of the listing starts: after the user created at `createdAtMicros` (microseconds since
 * the Unix epoch, PostgreSQL's own precision, as a decimal string) with id `id`.
 */
export interface UserListPosition {
  createdAtMicros: string;
  id: string;
}

/** One user's place in the listing and about how many bytes its representation takes. */
export interface UserListEntry {
  id: string;
  created_at_micros: string;
  size_bytes: number;
}

const COLUMNS = ['id', 'name', 'password_hash', 'is_admin', 'onboarding_done', 'profile_picture', 'settings'] as const;
const LIST_COLUMNS = COLUMNS.filter((column) => column !== 'password_hash');
const SIZE_BYTES = 'octet_length(profile_picture) + octet_length(name) + pg_column_size(settings) AS size_bytes';
/** A listing position as a row value to compare `(created_at, id)` with. */
const POSITION_SQL = "timestamptz 'epoch' + ?::bigint * interval '1 microsecond', ?::uuid";
/** The listing's sort key, exact to the microsecond (a JavaScript Date keeps only milliseconds). */
const CREATED_AT_MICROS = '(extract(epoch from created_at) * 1000000)::bigint::text AS created_at_micros';
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

  /** A user whose name folds (`foldUserName`) to the same as `name`. */
  async findByFoldedName(name: string, trx: Knex = this.knex): Promise<UserRow | undefined> {
    return trx('users')
      .select(COLUMNS)
      .where({ name_folded: foldUserName(name) })
      .first();
  }

  /**
   * Where the next `limit` users of the listing are (creation order, then id, after `after`) and about
   * how large each one is, without reading any picture: a keyset read on the `users_created_at_id`
   * index, so it costs the same at any table size, and users created between pages neither shift nor
   * repeat the walk. `octet_length` and `pg_column_size` read a stored value's size from its header,
   * so even megabyte pictures are not fetched here (settings count as stored, possibly compressed).
   */
  async listPositions(limit: number, after: UserListPosition | undefined, trx: Knex = this.knex): Promise<UserListEntry[]> {
    return afterPosition(trx('users').select(['id', trx.raw(CREATED_AT_MICROS), trx.raw(SIZE_BYTES)]), after)
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .limit(limit);
  }

  /**
   * The listing's view (never the password hash) of the users after `after` up to and including
   * `through`, at most `limit` of them: the same index range `listPositions` read, now with the rows.
   */
  async listRange(after: UserListPosition | undefined, through: UserListPosition, limit: number, trx: Knex = this.knex): Promise<UserListRow[]> {
    return afterPosition(trx('users').select(LIST_COLUMNS), after)
      .whereRaw(`(created_at, id) <= (${POSITION_SQL})`, [through.createdAtMicros, through.id])
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .limit(limit);
  }

  async insert(row: Omit<UserRow, 'id'>, trx: Knex = this.knex): Promise<UserRow> {
    const [created] = await trx('users')
      .insert({ ...row, name_folded: foldUserName(row.name), settings: JSON.stringify(row.settings) })
      .returning(COLUMNS);
    return created as UserRow;
  }

  async update(id: string, patch: Partial<Omit<UserRow, 'id'>>, trx: Knex = this.knex): Promise<UserRow | undefined> {
    const values: Record<string, unknown> = { ...patch, updated_at: trx.fn.now() };
    if (patch.settings) values.settings = JSON.stringify(patch.settings);
    if (patch.name !== undefined) values.name_folded = foldUserName(patch.name);
    const [updated] = await trx('users').where({ id }).update(values).returning(COLUMNS);
    return updated as UserRow | undefined;
  }

  async delete(id: string, trx: Knex = this.knex): Promise<boolean> {
    return affectedRows(await trx('users').where({ id }).delete()) > 0;
  }

  async countAdmins(trx: Knex = this.knex): Promise<number> {
    // The condition is written in the SQL, not bound: a prepared statement planned without its values
    // (PGlite plans generically) can only use the partial index users_admin when it sees `is_admin`.
    const row = await trx('users').whereRaw('is_admin').count<{ n: number }[]>('* as n').first();
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

/**
 * Narrows a listing query to the users after `after`: a row comparison on exactly the columns of
 * `users_created_at_id`, so PostgreSQL starts its index scan at the cursor.
 */
function afterPosition(query: Knex.QueryBuilder, after: UserListPosition | undefined): Knex.QueryBuilder {
  return after ? query.whereRaw(`(created_at, id) > (${POSITION_SQL})`, [after.createdAtMicros, after.id]) : query;
}
