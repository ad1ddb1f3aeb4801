import type { Knex } from 'knex';

/**
 * The stored answer of a mutating RPC that answers something other than its Operation
 * (AuthPublicKeyService.Generate: the key and its private key), replayed to a retry with the same
 * idempotency key. Sealed (AES-256-GCM) under a key derived from the caller's idempotency key,
 * which the row holds only as a hash (docs/cloud-api.md, "Retry safely").
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (table) => {
    table.binary('answer');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (table) => {
    table.dropColumn('answer');
  });
}
