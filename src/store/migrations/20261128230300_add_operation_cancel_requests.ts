import type { Knex } from 'knex';

/**
 * `OperationService.Cancel` (docs/operations.md, "Cancel"): a cancel request is recorded on the
 * operation's row, so the process holding the work learns of it whichever process took the request
 * (through NOTIFY, or at its next lease renewal or before it completes the work). NULL = not asked.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('operations', (table) => {
    table.timestamp('cancel_requested_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('operations', (table) => {
    table.dropColumn('cancel_requested_at');
  });
}
