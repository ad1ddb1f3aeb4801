import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { AppError } from '../../errors.js';
import { IdempotencyRepository, type IdempotencyRow, type IdempotencyScope } from '../../store/repositories/idempotency-repository.js';

/** The key alphabet of docs/cloud-api.md ("Retry safely"); 16 characters at least so keys are not guessed or reused by accident. */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9-]{16,128}$/;

export interface IdempotentResult {
  operationId: string;
  /** True when an earlier request with the key produced the operation. */
  replayed: boolean;
  /** On a replay under `sealWith`: the answer the first request stored (PendingKey.answer), opened. */
  answer?: Uint8Array;
}

/**
 * The idempotency key of the request being served, made by `IdempotencyKeys.runAtomic` and handed
 * to its `execute`, which passes it in the operation's input through the service down to
 * Operations.begin: the transaction that records the operation writes it (`recordPendingKey`).
 */
export interface PendingKey {
  readonly scope: IdempotencyScope;
  readonly hash: string;
  /** The caller's key, which seals the answer (runAtomic's `sealWith`); unset: no answer is kept. */
  readonly sealWith?: string;
  /**
   * For a mutating method whose answer is not its Operation (AuthPublicKeyService.Generate): the
   * encoded answer, kept with the key so that a retry with the key gets it again. Set by the service
   * before the operation is recorded.
   */
  answer?: Uint8Array;
  /** The operation the key was written with, once a transaction wrote it. */
  recordedFor?: string;
}

/** Thrown inside the recording transaction when another request committed the key first: the transaction rolls back. */
class KeyTaken extends Error {
  constructor() {
    super('the idempotency key was committed by another request');
  }
}

/**
 * Writes the pending key (if not yet written) in `trx`, answered by `operationId`: the key, the
 * operation and the resource change then commit together or not at all. When a concurrent request
 * with the key committed first, throws, so `trx` rolls back and the request answers the winner's
 * operation.
 */
export async function recordPendingKey(repository: IdempotencyRepository, trx: Knex, pending: PendingKey, operationId: string): Promise<void> {
  if (pending.recordedFor !== undefined) return;
  const sealed = pending.sealWith !== undefined && pending.answer !== undefined ? sealAnswer(pending.sealWith, pending.scope, pending.answer) : undefined;
  if (!(await repository.claimAnswered(pending.scope, pending.hash, operationId, trx, sealed))) throw new KeyTaken();
  pending.recordedFor = operationId;
}

/**
 * How a key whose request keeps a secret answer is stored: its SHA-256, so the row alone (a backup,
 * a database reader) cannot open the answer it seals.
 */
export function hashedIdempotencyKey(key: string): string {
  return `sha256-${createHash('sha256').update(key).digest('hex')}`;
}

/** AES-256-GCM under a key derived (HKDF-SHA256) from the caller's idempotency key and its scope: iv ‖ tag ‖ ciphertext. */
function sealAnswer(secret: string, scope: IdempotencyScope, answer: Uint8Array): Uint8Array {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', answerKey(secret, scope), iv);
  const body = Buffer.concat([cipher.update(answer), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

function openAnswer(secret: string, scope: IdempotencyScope, sealed: Uint8Array): Uint8Array {
  const bytes = Buffer.from(sealed);
  const decipher = createDecipheriv('aes-256-gcm', answerKey(secret, scope), bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(12, 28));
  return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]);
}

function answerKey(secret: string, scope: IdempotencyScope): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, `${scope.principal}\0${scope.method}`, 'cfs idempotent answer', 32));
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
 * Exactly-once execution per (principal, method, key): a unique constraint on the key decides the
 * winner, also across processes, and duplicates answer with the winner's operation. A different
 * request under the same key is refused; a failed request leaves the key free, since no operation
 * exists for it. The key is written by the transaction of the work (one commit), which receives it
 * explicitly (`execute(pending)`, then the operation's input, down to Operations.begin).
 */
export class IdempotencyKeys {
  private readonly repository: IdempotencyRepository;

  constructor(knex: Knex) {
    this.repository = new IdempotencyRepository(knex);
  }

  /**
   * Exactly-once execution in one commit, for an `execute` that records its operation through
   * Operations.begin with the pending key it is given: the key is written by that same transaction
   * (`recordPendingKey`), already answered by the operation, so no key ever points nowhere and no
   * committed operation lacks its key. Concurrent duplicates serialize on the key's unique index (or
   * earlier, on the locks the work takes, e.g. the per-project lock of a create): the one that
   * commits first wins, the others roll back their work and answer its operation. A retry of a
   * finished request does the same: its work runs up to the key (or fails on the state the first one
   * left) and rolls back. A failed request writes nothing, so its key stays free.
   */
  async runAtomic(
    scope: IdempotencyScope,
    hash: string,
    execute: (pending: PendingKey) => Promise<string | undefined>,
    options: { sealWith?: string } = {},
  ): Promise<IdempotentResult> {
    // No look-up first: a first request (the common case) goes straight to its transaction, and a
    // retry finds the key there (the insert conflicts, or the work fails on what the first one did).
    const pending: PendingKey = { scope, hash, ...(options.sealWith === undefined ? {} : { sealWith: options.sealWith }) };
    const answer = (row: IdempotencyRow) => this.answer(row, scope, hash, options.sealWith);
    if (options.sealWith !== undefined) {
      // Work that keeps its answer is costly (Generate: a key pair): a retry answers before doing it again.
      const first = await this.repository.find(scope);
      if (first) return answer(first);
    }
    let operationId: string | undefined;
    try {
      // An execute that answers no Operation names none: the one it recorded is the key's.
      operationId = (await execute(pending)) ?? pending.recordedFor;
    } catch (error) {
      // A duplicate (concurrent, or a retry) fails on the key (KeyTaken) or on the state the first
      // request left (the name it took, the operation it started): its operation is the answer.
      const winner = await this.repository.find(scope);
      if (winner) return answer(winner);
      throw error;
    }
    if (operationId === undefined) throw new Error('an idempotent request recorded no operation');
    if (pending.recordedFor !== operationId && !(await this.repository.claimAnswered(scope, hash, operationId))) {
      // The work recorded its operation without the pending key (no cloud RPC does): the key is
      // written after it, and a request that wrote it meanwhile keeps it. Such work is not
      // exactly-once, only answered so.
      const first = await this.repository.find(scope);
      if (first) return answer(first);
    }
    return { operationId, replayed: false };
  }

  /** The answer to a request whose key exists: the operation it names (and its sealed answer). */
  private answer(row: IdempotencyRow, scope: IdempotencyScope, hash: string, sealWith: string | undefined): IdempotentResult {
    if (row.request_hash !== hash) throw keyReused();
    // Every key is written already answered; one without its operation was left by the removed
    // three-commit path (20261129100100_drop_unanswered_idempotency_keys deletes them).
    if (!row.operation_id) throw new AppError('aborted', 'a request with this idempotency key is still in progress; retry later');
    const answer = sealWith !== undefined && row.answer ? openAnswer(sealWith, scope, row.answer) : undefined;
    return { operationId: row.operation_id, replayed: true, ...(answer ? { answer } : {}) };
  }
}

function keyReused(): AppError {
  return new AppError('invalid_argument', 'X-Idempotency-Key was already used with a different request', {
    violations: [{ field: 'x-idempotency-key', message: 'was already used with a different request' }],
  });
}
