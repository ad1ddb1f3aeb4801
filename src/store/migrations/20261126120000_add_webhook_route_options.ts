import type { Knex } from 'knex';

/**
 * Webhook route options (issue 22): a delay before the sender is answered, and the signature check
 * of captures (`verify`: scheme, write-only secret, header, tolerance; null for none), and each
 * capture's signature check, made once at capture time (null on a route without `verify`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_routes', (table) => {
    table.integer('response_delay_ms').notNullable().defaultTo(0);
    table.jsonb('verify');
  });
  await knex.schema.alterTable('webhook_requests', (table) => {
    table.jsonb('signature');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_requests', (table) => {
    table.dropColumn('signature');
  });
  await knex.schema.alterTable('webhook_routes', (table) => {
    table.dropColumn('verify');
    table.dropColumn('response_delay_ms');
  });
}
