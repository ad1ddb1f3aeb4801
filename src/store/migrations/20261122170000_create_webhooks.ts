import type { Knex } from 'knex';

/** Webhook inspector (SPEC §4): routes and the requests captured on them. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_routes', (table) => {
    table.uuid('id').primary();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('expires_at', { useTz: true }).notNullable();
    // What senders get back; null status means the default `{"ok":true,"requestId":…}`.
    table.integer('response_status');
    table.jsonb('response_headers');
    table.text('response_body');
    // Rows currently kept, maintained by the capture writer so eviction needs no count(*).
    table.bigInteger('request_count').notNullable().defaultTo(0);
  });
  await knex.raw('CREATE INDEX webhook_routes_expires_at ON webhook_routes (expires_at)');
  await knex.schema.createTable('webhook_requests', (table) => {
    table.uuid('id').primary();
    table.uuid('route_id').notNullable().references('id').inTable('webhook_routes').onDelete('CASCADE');
    // Capture order: newest first, cursor pagination and oldest-first eviction all use it.
    table.bigIncrements('seq', { primaryKey: false });
    table.timestamp('received_at', { useTz: true }).notNullable();
    table.text('method').notNullable();
    table.text('path').notNullable();
    table.text('query').notNullable();
    table.jsonb('headers').notNullable();
    table.text('content_type');
    table.integer('size').notNullable();
    table.boolean('truncated').notNullable();
    table.binary('body').notNullable();
    table.text('remote_address').notNullable();
    table.text('http_version').notNullable();
  });
  await knex.raw('CREATE UNIQUE INDEX webhook_requests_route_seq ON webhook_requests (route_id, seq)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_requests');
  await knex.schema.dropTable('webhook_routes');
}
