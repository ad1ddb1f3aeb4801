import type { Knex } from 'knex';

/**
 * The order of `GET /api/users` (creation time, then id): its pages are keyset reads on this index,
 * so a page costs the same at any table size instead of a sort of the whole table (docs/architecture.md).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX IF NOT EXISTS users_created_at_id ON users (created_at, id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS users_created_at_id');
}
