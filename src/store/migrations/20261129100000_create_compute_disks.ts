import type { Knex } from 'knex';

/**
 * Compute disks (docs/cloud-api.md, "Disks"): the table of a named cloud resource kind, as
 * `compute_instances` — the whole `cloud.compute.v1.Disk` in `data` (protobuf binary), `doc` its
 * JSON for List filters, copies of the lookup columns beside them, and the labels trigger that
 * keeps `cloud_resource_labels` for label filters.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('compute_disks', (table) => {
    table.text('id').primary();
    table.specificType('seq', 'bigserial').notNullable();
    table.text('parent_id').notNullable();
    table.text('name').notNullable();
    table.bigInteger('resource_version').notNullable();
    table.binary('data').notNullable();
    table.jsonb('doc');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE UNIQUE INDEX compute_disks_name ON compute_disks (parent_id, name)');
  await knex.raw('CREATE INDEX compute_disks_parent ON compute_disks (parent_id, seq)');
  await knex.raw(`CREATE TRIGGER compute_disks_labels AFTER INSERT OR DELETE OR UPDATE OF doc, parent_id ON compute_disks
    FOR EACH ROW EXECUTE FUNCTION cloud_resource_labels_sync()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex('cloud_resource_labels').where({ resource_table: 'compute_disks' }).delete();
  await knex.schema.dropTable('compute_disks');
}
