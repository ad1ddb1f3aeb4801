import { fromBinary, type DescMessage } from '@bufbuild/protobuf';
import type { Knex } from 'knex';
import { InstanceSchema } from '../../../generated/proto/cloud/compute/v1/instance_pb.js';
import { AuthPublicKeySchema } from '../../../generated/proto/cloud/iam/v1/auth_public_key_pb.js';
import { ProjectSchema } from '../../../generated/proto/cloud/iam/v1/project_pb.js';
import { ServiceAccountSchema } from '../../../generated/proto/cloud/iam/v1/service_account_pb.js';
import { resourceDocument } from '../resource-document.js';

const TABLES: ReadonlyArray<readonly [string, DescMessage]> = [
  ['compute_instances', InstanceSchema],
  ['iam_projects', ProjectSchema],
  ['iam_service_accounts', ServiceAccountSchema],
  ['iam_public_keys', AuthPublicKeySchema],
];
const BATCH = 1000;

/**
 * List filters (docs/cloud-api.md, "List filters"): every cloud resource table gains `doc`, the
 * resource's JSON mapping (src/store/resource-document.ts), filled here from `data` for the rows
 * already stored. Indexes keep a filtered page O(page) for the filters users ask for most:
 * - instances by state: `(parent_id, status.state, seq)`, walked in `seq` order from the cursor;
 * - labels (`labels.env = "prod"`, `labels:team`) of every resource: `cloud_resource_labels`, one row
 *   per label kept by a trigger from `doc`, indexed `(table, parent, key, value, seq)` and
 *   `(table, parent, key, seq)` so a page walks only the rows that carry the label.
 */
export async function up(knex: Knex): Promise<void> {
  for (const [table, schema] of TABLES) {
    await knex.raw(`ALTER TABLE ${table} ADD COLUMN doc jsonb`);
    for (let after = -1; ; ) {
      const rows = (await knex(table).select('id', 'seq', 'data').where('seq', '>', after).orderBy('seq').limit(BATCH)) as Array<{
        id: string;
        seq: string | number;
        data: Uint8Array;
      }>;
      const last = rows[rows.length - 1];
      if (last === undefined) break;
      // One statement per batch: (id, doc) pairs as parameters.
      const docs = rows.flatMap((row) => [row.id, row.data.length === 0 ? null : resourceDocument(schema, fromBinary(schema, new Uint8Array(row.data)))]);
      await knex.raw(
        `UPDATE ${table} SET doc = batch.doc::jsonb FROM (VALUES ${rows.map(() => '(?, ?)').join(', ')}) AS batch (id, doc) WHERE ${table}.id = batch.id`,
        docs,
      );
      after = Number(last.seq);
    }
  }
  await knex.raw(`CREATE INDEX compute_instances_state ON compute_instances (parent_id, (doc #>> '{status,state}'), seq)`);
  await knex.schema.createTable('cloud_resource_labels', (table) => {
    table.text('resource_table').notNullable();
    table.text('parent_id').notNullable();
    table.text('key').notNullable();
    table.text('value').notNullable();
    table.bigInteger('seq').notNullable();
    table.text('resource_id').notNullable();
    table.primary(['resource_table', 'resource_id', 'key']);
  });
  await knex.raw('CREATE INDEX cloud_resource_labels_value ON cloud_resource_labels (resource_table, parent_id, key, value, seq) INCLUDE (resource_id)');
  await knex.raw('CREATE INDEX cloud_resource_labels_key ON cloud_resource_labels (resource_table, parent_id, key, seq) INCLUDE (resource_id)');
  await knex.raw(`
    CREATE FUNCTION cloud_resource_labels_sync() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP <> 'INSERT' THEN
        DELETE FROM cloud_resource_labels WHERE resource_table = TG_TABLE_NAME AND resource_id = OLD.id;
      END IF;
      IF TG_OP <> 'DELETE' AND jsonb_typeof(NEW.doc #> '{metadata,labels}') = 'object' THEN
        INSERT INTO cloud_resource_labels (resource_table, parent_id, key, value, seq, resource_id)
        SELECT TG_TABLE_NAME, NEW.parent_id, label.key, label.value, NEW.seq, NEW.id
        FROM jsonb_each_text(NEW.doc #> '{metadata,labels}') AS label;
      END IF;
      RETURN NULL;
    END $$`);
  for (const [table] of TABLES) {
    await knex.raw(`INSERT INTO cloud_resource_labels (resource_table, parent_id, key, value, seq, resource_id)
      SELECT '${table}', parent_id, label.key, label.value, seq, id FROM ${table}, jsonb_each_text(doc #> '{metadata,labels}') AS label
      WHERE jsonb_typeof(doc #> '{metadata,labels}') = 'object'`);
    await knex.raw(`CREATE TRIGGER ${table}_labels AFTER INSERT OR DELETE OR UPDATE OF doc, parent_id ON ${table}
      FOR EACH ROW EXECUTE FUNCTION cloud_resource_labels_sync()`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [table] of TABLES) await knex.raw(`DROP TRIGGER ${table}_labels ON ${table}`);
  await knex.raw('DROP FUNCTION cloud_resource_labels_sync()');
  await knex.schema.dropTable('cloud_resource_labels');
  await knex.raw('DROP INDEX compute_instances_state');
  for (const [table] of TABLES) await knex.raw(`ALTER TABLE ${table} DROP COLUMN doc`);
}
