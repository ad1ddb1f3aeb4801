import type { Knex } from 'knex';

/**
 * Indexes that keep the cloud API's invariant checks and sweeps O(page) at any table size
 * (docs/performance.md):
 * - the running operation of a resource (one operation at a time) from a partial index of the open
 *   ones, instead of every operation the resource ever had;
 * - ListOperationsByParent from an index that leads with the parent and the service, in `seq` order;
 * - retention walks `(finished_at, id)` ranges of completed operations, never rescanning a row;
 * - a worker's claim reads the open, claimable work in `seq` order: the global `seq` index made it
 *   walk every operation ever finished whenever nothing was claimable (1.3 s per poll at 10^6 rows),
 *   and let the planner answer ListOperationsByParent by walking it too. Nothing else reads `seq`
 *   without a resource or a parent, so it goes (`seq` stays unique: it comes from a sequence).
 * The other indexes replaced are prefixes of the new ones.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX operations_running_resource ON operations (resource_id, seq) WHERE status IS NULL');
  await knex.raw('CREATE INDEX operations_parent_service ON operations (parent_id, service, seq)');
  await knex.raw('DROP INDEX operations_parent');
  await knex.raw('CREATE INDEX operations_retention ON operations (finished_at, id) WHERE status IS NOT NULL');
  await knex.raw('DROP INDEX operations_finished');
  await knex.raw("CREATE INDEX operations_claimable ON operations (seq) WHERE state <> 'done' AND kind IS NOT NULL");
  await knex.raw('DROP INDEX operations_seq');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE UNIQUE INDEX operations_seq ON operations (seq)');
  await knex.raw('DROP INDEX operations_claimable');
  await knex.raw('CREATE INDEX operations_finished ON operations (finished_at) WHERE status IS NOT NULL');
  await knex.raw('DROP INDEX operations_retention');
  await knex.raw('CREATE INDEX operations_parent ON operations (parent_id, seq)');
  await knex.raw('DROP INDEX operations_parent_service');
  await knex.raw('DROP INDEX operations_running_resource');
}
