import type { Knex } from 'knex';
import { OperationRepository } from '../../store/repositories/operation-repository.js';
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
}

export interface SweepResult {
  operations: number;
  idempotencyKeys: number;
}

const BATCH = 1000;

/**
 * Deletes completed operations past their retention (running ones never) and idempotency keys past
 * 24 h. Every process sweeps; batches are claimed with SKIP LOCKED, so they never wait on each other.
 * An operation an unexpired idempotency key still answers with is kept until the key expires.
 */
export class OperationSweeper {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> | undefined;
  private readonly operations: OperationRepository;
  private readonly keys: IdempotencyRepository;

  constructor(private readonly options: OperationSweeperOptions) {
    this.operations = new OperationRepository(options.knex);
    this.keys = new IdempotencyRepository(options.knex);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.sweeping ??= this.sweepOnce()
        .catch((error: unknown) => this.options.onError?.(error, 'sweeping operations'))
        .finally(() => (this.sweeping = undefined));
    }, this.options.intervalMs ?? 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping;
  }

  /** One sweep as of `now`; answers how many rows went. */
  async sweepOnce(now: Date = new Date()): Promise<SweepResult> {
    const cutoff = new Date(now.getTime() - this.options.retentionSeconds * 1000);
    const keysSince = new Date(now.getTime() - IDEMPOTENCY_KEY_RETENTION_SECONDS * 1000);
    let operations = 0;
    for (;;) {
      const deleted = await this.operations.deleteFinishedBefore(cutoff, keysSince, BATCH);
      operations += deleted;
      if (deleted < BATCH) break;
    }
    const idempotencyKeys = await this.keys.deleteCreatedBefore(keysSince);
    return { operations, idempotencyKeys };
  }
}
