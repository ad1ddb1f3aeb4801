import type { Knex } from 'knex';

/**
 * Filtered operation lists (docs/cloud-api.md, "List filters"): a filter that requires running
 * operations (`NOT status:*`) walks only the running ones, in `seq` order. By resource the partial
 * index `operations_running_resource` already serves it; by parent (ListOperationsByParent) this one
 * does, so a page of a project's running operations costs O(page) however many finished ones it has.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX operations_running_parent ON operations (parent_id, service, seq) WHERE status IS NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX operations_running_parent');
}
