import type { Knex } from 'knex';

/**
 * Secrets the server generates itself (token signing keys): stored once so restarts and several
 * processes on one database agree.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('signing_keys', (table) => {
    table.text('kid').primary();
    table.text('algorithm').notNullable();
    table.text('private_key_pem').notNullable();
    table.text('public_key_pem').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('retired_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('signing_keys');
}
