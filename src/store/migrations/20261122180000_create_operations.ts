import type { Knex } from 'knex';

/**
 * Operations of the cloud API (SPEC §5) with their background work, and idempotency keys.
 * One row is both the client-visible Operation and the work item, so completing the work and
 * setting the operation's status happen in one transaction.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('operations', (table) => {
    table.text('id').primary();
    // Insertion order for keyset pagination (timestamps can tie).
    table.specificType('seq', 'bigserial').notNullable();
    // The api_service_name of the service that started it (e.g. "compute").
    table.text('service').notNullable();
    table.text('description').notNullable();
    table.text('created_by').notNullable();
    table.text('resource_id').notNullable();
    // The resource's parent (a project), for ListOperationsByParent and authorization.
    table.text('parent_id').notNullable().defaultTo('');
    // A google.protobuf.Any with sensitive/credentials fields cleared.
    table.binary('request').notNullable();
    table.jsonb('request_headers').notNullable().defaultTo('{}');
    // A google.rpc.Status; NULL while the operation runs.
    table.binary('status');
    table.binary('progress');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('finished_at', { useTz: true });
    // Background work: what to do, and who holds it until when.
    table.text('kind');
    table.jsonb('payload').notNullable().defaultTo('{}');
    table.text('state').notNullable().defaultTo('pending');
    table.text('claimed_by');
    table.timestamp('claimed_until', { useTz: true });
    table.integer('attempts').notNullable().defaultTo(0);
  });
  await knex.raw("ALTER TABLE operations ADD CONSTRAINT operations_state_check CHECK (state IN ('pending', 'running', 'done'))");
  await knex.raw('CREATE UNIQUE INDEX operations_seq ON operations (seq)');
  await knex.raw('CREATE INDEX operations_resource ON operations (resource_id, seq)');
  await knex.raw('CREATE INDEX operations_parent ON operations (parent_id, seq)');
  await knex.raw("CREATE INDEX operations_open_work ON operations (claimed_until) WHERE state <> 'done'");
  await knex.raw('CREATE INDEX operations_finished ON operations (finished_at) WHERE status IS NOT NULL');
  await knex.schema.createTable('idempotency_keys', (table) => {
    table.text('principal').notNullable();
    table.text('method').notNullable();
    table.text('key').notNullable();
    table.text('request_hash').notNullable();
    // NULL while the first request with this key is still being served.
    table.text('operation_id');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.primary(['principal', 'method', 'key']);
  });
  await knex.raw('CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)');
  await knex.raw('CREATE INDEX idempotency_keys_operation ON idempotency_keys (operation_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('idempotency_keys');
  await knex.schema.dropTable('operations');
}
