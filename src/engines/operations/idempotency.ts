import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import { AppError } from '../../errors.js';
import { IdempotencyRepository, type IdempotencyScope } from '../../store/repositories/idempotency-repository.js';

/** The key alphabet of docs/cloud-api.md ("Retry safely"); 16 characters at least so keys are not guessed or reused by accident. */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9-]{16,128}$/;

export interface IdempotencyOptions {
  /** How long a duplicate waits for the first request to produce its operation. */
  waitMs?: number;
  /** How often a duplicate looks again when the first request runs in another process. */
  pollMs?: number;
  /** A first request unfinished after this long is presumed dead (its process crashed) and taken over. */
  staleMs?: number;
}

export interface IdempotentResult {
  operationId: string;
  /** True when an earlier request with the key produced the operation. */
  replayed: boolean;
}

/** Checks the key's shape; a malformed key is the client's error. */
export function assertIdempotencyKey(key: string): void {
  if (!IDEMPOTENCY_KEY_PATTERN.test(key)) {
    throw new AppError('invalid_argument', 'X-Idempotency-Key must be 16 to 128 characters from A-Z, a-z, 0-9 and "-"', {
      violations: [{ field: 'x-idempotency-key', message: 'must match [A-Za-z0-9-]{16,128}' }],
    });
  }
}

/** A stable hash of a request: the caller passes a canonical encoding (message and relevant headers). */
export function requestHash(...parts: string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\0');
  return hash.digest('hex');
}

/**
 * Exactly-once execution per (principal, method, key): the first request inserts the key (a
 * unique constraint decides the winner, also across processes) and runs; duplicates wait for its
 * operation id and answer with that operation. A different request under the same key is refused.
 * A failed first request releases the key, since no operation exists for it.
 */
export class IdempotencyKeys {
  private readonly repository: IdempotencyRepository;
  private readonly settled = new EventEmitter();

  constructor(
    knex: Knex,
    private readonly options: IdempotencyOptions = {},
  ) {
    this.repository = new IdempotencyRepository(knex);
    this.settled.setMaxListeners(0);
  }

  async run(scope: IdempotencyScope, hash: string, execute: () => Promise<string>): Promise<IdempotentResult> {
    const waitMs = this.options.waitMs ?? 30_000;
    const deadline = Date.now() + waitMs;
    const name = JSON.stringify([scope.principal, scope.method, scope.key]);
    for (;;) {
      let claimed = await this.repository.claim(scope, hash);
      const row = claimed ? undefined : await this.repository.find(scope);
      if (!claimed && row === undefined) continue; // the first request failed and released the key
      if (row && row.request_hash !== hash) throw keyReused();
      if (row?.operation_id) return { operationId: row.operation_id, replayed: true };
      const staleMs = this.options.staleMs ?? 60_000;
      if (row && Date.now() - row.created_at.getTime() > staleMs) {
        claimed = await this.repository.takeOver(scope, new Date(Date.now() - staleMs));
      }
      if (claimed) {
        try {
          const operationId = await execute();
          await this.repository.setOperation(scope, operationId);
          return { operationId, replayed: false };
        } catch (error) {
          await this.repository.release(scope).catch(() => undefined);
          throw error;
        } finally {
          this.settled.emit(name);
        }
      }
      if (Date.now() > deadline) {
        throw new AppError('aborted', 'a request with this idempotency key is still in progress; retry later');
      }
      await this.waitForSettle(name, Math.min(this.options.pollMs ?? 25, Math.max(1, deadline - Date.now())));
    }
  }

  private waitForSettle(name: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.settled.off(name, done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.settled.on(name, done);
    });
  }
}

function keyReused(): AppError {
  return new AppError('invalid_argument', 'X-Idempotency-Key was already used with a different request', {
    violations: [{ field: 'x-idempotency-key', message: 'was already used with a different request' }],
  });
}
