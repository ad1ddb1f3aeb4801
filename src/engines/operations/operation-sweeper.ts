import type { Knex } from 'knex';
import { OperationRepository, type RetentionCursor } from '../../store/repositories/operation-repository.js';
import { IdempotencyRepository } from '../../store/repositories/idempotency-repository.js';

/** Idempotency keys are answered for at least this long (docs/cloud-api.md: 24 h). */
export const IDEMPOTENCY_KEY_RETENTION_SECONDS = 24 * 3600;

export interface OperationSweeperOptions {
  knex: Knex;
  /** Completed operations older than this are deleted. */
  retentionSeconds: number;
  /** How often to sweep. */
  intervalMs?: number;
  onError?(error: unknown, context: string): void;
  /** Rows per statement (tests make them small to see the chunks). */
  batchSize?: { operations?: number; keys?: number };
}

export interface SweepResult {
  operations: number;
  idempotencyKeys: number;
}

/**
 * Rows per statement: large enough for ~20,000 rows/s on a backlog, small enough that one statement
 * (its own short transaction) takes tens of milliseconds, never the statement timeout.
 */
const OPERATION_BATCH = 5000;
const KEY_BATCH = 5000;

/**
 * Deletes completed operations past their retention (running ones never) and idempotency keys past
 * 24 h, each in bounded statements: retention walks `(finished_at, id)` ranges forward (a row kept
 * for its key is read once per sweep, a deleted one never again), key expiry takes the oldest keys a
 * chunk at a time. Every process sweeps; rows are claimed with SKIP LOCKED, so sweepers never wait
 * on each other. An operation an unexpired idempotency key still answers with is kept until the key
 * expires.
 */
export class OperationSweeper {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> | undefined;
  /** Set by stop(): a sweep in progress ends after its current statement. */
  private stopping = false;
  private readonly operations: OperationRepository;
  private readonly keys: IdempotencyRepository;
  private readonly batches: { operations: number; keys: number };

  constructor(private readonly options: OperationSweeperOptions) {
    this.operations = new OperationRepository(options.knex);
    this.keys = new IdempotencyRepository(options.knex);
    this.batches = { operations: options.batchSize?.operations ?? OPERATION_BATCH, keys: options.batchSize?.keys ?? KEY_BATCH };
  }

  start(): void {
    if (this.timer) return;
    this.stopping = false;
    this.timer = setInterval(() => {
      this.sweeping ??= this.sweepOnce()
        .catch((error: unknown) => this.options.onError?.(error, 'sweeping operations'))
        .finally(() => (this.sweeping = undefined));
    }, this.options.intervalMs ?? 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping;
  }

  /** One sweep as of `now`; answers how many rows went. */
  async sweepOnce(now: Date = new Date()): Promise<SweepResult> {
    const operations = await this.sweepOperations(now);
    const idempotencyKeys = await this.expireKeys(now);
    return { operations, idempotencyKeys };
  }

  /** Retention alone: deletes the completed operations past retention as of `now`; answers how many. */
  async sweepOperations(now: Date = new Date()): Promise<number> {
    const cutoff = new Date(now.getTime() - this.options.retentionSeconds * 1000);
    const keysSince = keyCutoff(now);
    let operations = 0;
    let after: RetentionCursor | undefined;
    for (;;) {
      const batch = await this.operations.deleteFinishedBatch({ cutoff, keysSince, after }, this.batches.operations);
      operations += batch.deleted;
      if (batch.scanned < this.batches.operations || !batch.last || this.stopping) return operations;
      after = batch.last;
    }
  }

  /** Key expiry alone: deletes the idempotency keys past 24 h as of `now`; answers how many. */
  async expireKeys(now: Date = new Date()): Promise<number> {
    const keysSince = keyCutoff(now);
    let idempotencyKeys = 0;
    for (;;) {
      const deleted = await this.keys.deleteCreatedBefore(keysSince, this.batches.keys);
      idempotencyKeys += deleted;
      if (deleted < this.batches.keys || this.stopping) return idempotencyKeys;
    }
  }
}

function keyCutoff(now: Date): Date {
  return new Date(now.getTime() - IDEMPOTENCY_KEY_RETENTION_SECONDS * 1000);
}
