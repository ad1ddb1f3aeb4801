import type { Knex } from 'knex';
import { affectedRows } from '../affected-rows.js';

/** Who sent which key to which method: the identity of one idempotent request. */
export interface IdempotencyScope {
  principal: string;
  method: string;
  key: string;
}

export interface IdempotencyRow extends IdempotencyScope {
  request_hash: string;
  operation_id: string | null;
  /** The sealed answer of a method whose answer is not its Operation (IdempotencyKeys.runAtomic's `sealWith`). */
  answer: Uint8Array | null;
  created_at: Date;
}

/** SQL for idempotency keys; the primary key (principal, method, key) decides which request wins. */
export class IdempotencyRepository {
  constructor(private readonly knex: Knex) {}

  /** Inserts the key; false when it already exists (another request with the key came first). */
  async claim(scope: IdempotencyScope, requestHash: string, trx: Knex = this.knex): Promise<boolean> {
    const rows = await trx('idempotency_keys')
      .insert({ ...scope, request_hash: requestHash })
      .onConflict(['principal', 'method', 'key'])
      .ignore()
      .returning('key');
    return rows.length > 0;
  }

  /**
   * Inserts the key already answered by `operationId` (in the transaction that records the
   * operation); false when the key exists. A concurrent insert of the same key waits for the other
   * transaction to end, so the loser sees the winner's committed row.
   */
  async claimAnswered(scope: IdempotencyScope, requestHash: string, operationId: string, trx: Knex = this.knex, answer?: Uint8Array): Promise<boolean> {
    const rows = await trx('idempotency_keys')
      .insert({ ...scope, request_hash: requestHash, operation_id: operationId, ...(answer ? { answer: Buffer.from(answer) } : {}) })
      .onConflict(['principal', 'method', 'key'])
      .ignore()
      .returning('key');
    return rows.length > 0;
  }

  async find(scope: IdempotencyScope, trx: Knex = this.knex): Promise<IdempotencyRow | undefined> {
    const row = await trx('idempotency_keys').select('*').where(scope).first();
    return row ? { ...row, created_at: new Date(row.created_at) } : undefined;
  }

  async setOperation(scope: IdempotencyScope, operationId: string, trx: Knex = this.knex): Promise<void> {
    await trx('idempotency_keys').where(scope).update({ operation_id: operationId });
  }

  /** Forgets a key whose first request failed, so a retry runs again (errors are not operations). */
  async release(scope: IdempotencyScope, trx: Knex = this.knex): Promise<void> {
    await trx('idempotency_keys').where(scope).whereNull('operation_id').delete();
  }

  /** Takes over a key whose first request never finished (its process died); false when someone else did. */
  async takeOver(scope: IdempotencyScope, olderThan: Date, trx: Knex = this.knex): Promise<boolean> {
    const result: unknown = await trx('idempotency_keys')
      .where(scope)
      .whereNull('operation_id')
      .where('created_at', '<', olderThan)
      .update({ created_at: trx.fn.now() });
    return affectedRows(result) > 0;
  }

  /**
   * Deletes up to `limit` keys created before `cutoff`, oldest first (the `created_at` index), in one
   * short statement; keys another process is deleting are skipped.
   */
  async deleteCreatedBefore(cutoff: Date, limit: number, trx: Knex = this.knex): Promise<number> {
    const result = await trx.raw(
      `DELETE FROM idempotency_keys k USING (
         SELECT principal, method, key FROM idempotency_keys WHERE created_at < ? ORDER BY created_at LIMIT ? FOR UPDATE SKIP LOCKED
       ) b
       WHERE k.principal = b.principal AND k.method = b.method AND k.key = b.key`,
      [cutoff, limit],
    );
    return affectedRows(result);
  }
}
