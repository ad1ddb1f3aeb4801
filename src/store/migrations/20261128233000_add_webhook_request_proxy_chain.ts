import type { Knex } from 'knex';

/**
 * The trusted proxies a capture came through (issue 27, `TRUST_PROXY`), farthest first, as a comma
 * list of addresses; null when the client connected directly. `remote_address` is the client they named.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_requests', (table) => {
    table.text('proxy_chain');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_requests', (table) => {
    table.dropColumn('proxy_chain');
  });
}
