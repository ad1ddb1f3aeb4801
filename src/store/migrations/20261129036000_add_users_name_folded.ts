import type { Knex } from 'knex';
import { foldUserName } from '../../auth/user-name.js';

/** Rows backfilled per statement, so the migration's cost per statement stays bounded on a large table. */
const CHUNK = 1000;

/**
 * Each user's name as `foldUserName` folds it, stored and indexed: the uniqueness check compares this
 * column instead of folding in SQL (PostgreSQL's `btrim` trims only spaces, JavaScript's `trim` every
 * Unicode space, so the two sides disagreed), and it no longer scans the whole table.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE users ADD COLUMN IF NOT EXISTS name_folded text');
  for (;;) {
    const rows: { id: string; name: string }[] = await knex('users').select('id', 'name').whereNull('name_folded').orderBy('id').limit(CHUNK);
    if (rows.length === 0) break;
    await knex.raw(
      'UPDATE users SET name_folded = folded.value FROM (SELECT unnest(?::uuid[]) AS id, unnest(?::text[]) AS value) AS folded WHERE users.id = folded.id',
      [rows.map((row) => row.id), rows.map((row) => foldUserName(row.name))],
    );
  }
  await knex.raw('ALTER TABLE users ALTER COLUMN name_folded SET NOT NULL');
  await knex.raw('CREATE INDEX IF NOT EXISTS users_name_folded ON users (name_folded)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS users_name_folded');
  await knex.raw('ALTER TABLE users DROP COLUMN IF EXISTS name_folded');
}
