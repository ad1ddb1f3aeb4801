import type { Knex } from 'knex';

/**
 * The three-commit idempotency path (`IdempotencyKeys.run`: claim the key, run, answer it) is gone:
 * every key is now written already answered, in the transaction of its operation. A key that path
 * claimed and never answered (its process died between the commits) would only make its retries wait
 * and fail, so such rows are deleted. Nothing to undo: a key without its operation answers nothing.
 */
export async function up(knex: Knex): Promise<void> {
  await knex('idempotency_keys').whereNull('operation_id').delete();
}

export async function down(): Promise<void> {
  // The deleted rows named no operation; there is nothing to put back.
}
