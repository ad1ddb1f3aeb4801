import type { Knex } from 'knex';

/**
 * Compute instances (SPEC §5). The whole `cloud.compute.v1.Instance` is stored as protobuf binary
 * in `data` (it keeps fields this build does not know); the columns beside it are copies for
 * lookups, uniqueness and ordering.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('compute_instances', (table) => {
    table.text('id').primary();
    table.specificType('seq', 'bigserial').notNullable();
    table.text('parent_id').notNullable();
    table.text('name').notNullable();
    table.bigInteger('resource_version').notNullable();
    table.binary('data').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE UNIQUE INDEX compute_instances_name ON compute_instances (parent_id, name)');
  await knex.raw('CREATE INDEX compute_instances_parent ON compute_instances (parent_id, seq)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('compute_instances');
}
