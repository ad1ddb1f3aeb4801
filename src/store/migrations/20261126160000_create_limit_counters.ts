import type { Knex } from 'knex';

/**
 * Counters of the abuse limits every server process shares (issue 21): failed sign-ins per name,
 * per name and address, per address, and route creations per address. A row lives until its window
 * ends (`expires_at`); counting sweeps a few expired rows each time, so the table stays bounded.
 * Replaces `sign_in_failures`, which had no expiry.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('limit_counters', (table) => {
    table.text('key').primary();
    table.integer('count').notNullable();
    table.timestamp('expires_at', { useTz: true }).notNullable();
  });
  await knex.raw('CREATE INDEX limit_counters_expires_at ON limit_counters (expires_at)');
  await knex.schema.dropTable('sign_in_failures');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.createTable('sign_in_failures', (table) => {
    table.text('key').primary();
    table.integer('failures').notNullable();
    table.timestamp('window_started_at', { useTz: true }).notNullable();
  });
  await knex.schema.dropTable('limit_counters');
}
