import { create, toBinary } from '@bufbuild/protobuf';
import type { Knex } from 'knex';
import { InstanceSchema, InstanceStatus_State } from '../../generated/proto/cloud/compute/v1/instance_pb.js';
import { migrationSource } from '../../src/store/migrations/index.js';
import { ResourceRepository } from '../../src/store/repositories/resource-repository.js';
import { resourceDocument } from '../../src/store/resource-document.js';
import { openTestDatabase } from '../support/app.js';

const MIGRATION = '20261128230200_filterable_cloud_resources';

/** Rolls back MIGRATION and every migration after it, newest first (compute_disks' label trigger uses its function). */
async function rollBackThroughMigration(knex: Knex): Promise<void> {
  for (;;) {
    const [completed] = (await knex.migrate.list({ migrationSource })) as [Array<string | { name: string }>, unknown];
    if (!completed.some((migration) => (typeof migration === 'string' ? migration : migration.name) === MIGRATION)) return;
    await knex.migrate.down({ migrationSource });
  }
}

function instance(id: string, labels: Record<string, string>) {
  return create(InstanceSchema, {
    metadata: { id, parentId: 'project-mig', name: id, labels, resourceVersion: 1n },
    spec: { description: 'kept', cloudInitUserData: 'secret' },
    status: { state: InstanceStatus_State.RUNNING },
  });
}

test('the filter migration fills doc and the label rows from stored resources, keeps them in step, and rolls back cleanly', async () => {
  const { db, drop } = await openTestDatabase();
  const { knex } = db;
  try {
    await rollBackThroughMigration(knex);
    expect(await knex.schema.hasColumn('compute_instances', 'doc')).toBe(false);
    const stored = instance('instance-mig1', { env: 'prod', team: 'core' });
    await knex('compute_instances').insert({
      id: 'instance-mig1',
      parent_id: 'project-mig',
      name: 'instance-mig1',
      resource_version: 1,
      data: Buffer.from(toBinary(InstanceSchema, stored)),
    });

    await knex.migrate.up({ migrationSource, name: MIGRATION });
    const row = await knex('compute_instances').where({ id: 'instance-mig1' }).first('doc');
    expect(row.doc).toEqual(JSON.parse(resourceDocument(InstanceSchema, stored)));
    expect(row.doc.status.state).toBe('STATE_RUNNING');
    // Secrets are cleared (the implicit field is written at its default).
    expect(row.doc.spec.cloudInitUserData).toBe('');
    const labels = async () =>
      (await knex('cloud_resource_labels').where({ resource_id: 'instance-mig1' }).orderBy('key').select('resource_table', 'parent_id', 'key', 'value')).map(
        (label: Record<string, string>) => `${label.resource_table}/${label.parent_id}/${label.key}=${label.value}`,
      );
    expect(await labels()).toEqual(['compute_instances/project-mig/env=prod', 'compute_instances/project-mig/team=core']);

    // The trigger keeps the label rows in step with every write of doc.
    const repository = new ResourceRepository(knex, 'compute_instances');
    const changed = instance('instance-mig1', { env: 'dev' });
    await repository.update({
      id: 'instance-mig1',
      name: 'instance-mig1',
      resource_version: 2,
      data: toBinary(InstanceSchema, changed),
      doc: resourceDocument(InstanceSchema, changed),
    });
    expect(await labels()).toEqual(['compute_instances/project-mig/env=dev']);
    await repository.delete('instance-mig1');
    expect(await labels()).toEqual([]);

    await knex.migrate.down({ migrationSource, name: MIGRATION });
    expect(await knex.schema.hasColumn('compute_instances', 'doc')).toBe(false);
    expect(await knex.schema.hasTable('cloud_resource_labels')).toBe(false);
    await knex.migrate.up({ migrationSource, name: MIGRATION });
    expect(await knex.schema.hasTable('cloud_resource_labels')).toBe(true);
  } finally {
    await db.close();
    await drop();
  }
});
