import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { OperationRepository, type ClaimedWorkRow } from '../../store/repositories/operation-repository.js';
import { okStatus } from './operation-message.js';

/** One claimed piece of work, as a handler sees it. */
export interface Work {
  operationId: string;
  kind: string;
  payload: Record<string, unknown>;
  resourceId: string;
  parentId: string;
  /** 1 on the first claim; more when a previous holder died or failed mid-way. */
  attempt: number;
}

/**
 * What to do when the work of one kind is due. `complete` runs inside the transaction that also
 * marks the operation done, so the resource change and the operation's status commit together.
 * When it throws, `fail` (if given) runs in a fresh transaction with the error, and the operation
 * ends with the failure status.
 */
export interface WorkHandler {
  complete(trx: Knex, work: Work): Promise<void>;
  fail?(trx: Knex, work: Work, error: unknown): Promise<void>;
}

export interface OperationWorkerOptions {
  knex: Knex;
  handlers: Record<string, WorkHandler>;
  /** How long the simulated work of one operation takes. */
  workMs: number;
  /** How long a claim lasts; it is renewed every third of that while the work runs. */
  leaseMs: number;
  /** How often to look for work when nothing woke the worker. */
  pollMs: number;
  /** Work items held at once by this worker. */
  concurrency?: number;
  /** Encodes a failure as a google.rpc.Status (with ServiceError details). */
  failureStatus(error: unknown, work: Work): Uint8Array;
  onError?(error: unknown, context: string): void;
  workerId?: string;
}

/**
 * Runs the background work of operations: claims due items with `FOR UPDATE SKIP LOCKED` and a
 * lease (so several processes share the work and a crashed holder's items are claimed again once
 * its lease runs out), performs them and completes their operations. Emits `finished` (operation id).
 */
export class OperationWorker extends EventEmitter<{ finished: [string] }> {
  readonly workerId: string;
  private readonly repository: OperationRepository;
  private readonly inFlight = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private running = false;
  private stopped: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private pendingWake = false;

  constructor(private readonly options: OperationWorkerOptions) {
    super();
    this.workerId = options.workerId ?? `worker-${randomBytes(8).toString('hex')}`;
    this.repository = new OperationRepository(options.knex);
  }

  /** Starts claiming work. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Looks for work now (new work was enqueued here or another process said so). */
  wake(): void {
    this.pendingWake = true;
    this.wakeUp?.();
  }

  /**
   * Stops claiming, abandons the work in progress and gives its claims back, so another process
   * (or this one after a restart) finishes it at once.
   */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      await this.halt();
      await this.repository.release(this.workerId).catch((error: unknown) => this.options.onError?.(error, 'releasing claims'));
    })();
    return this.stopped;
  }

  /**
   * Stops like a killed process would: the work in progress is dropped and its claims are kept
   * until their lease runs out. Used by tests of crash recovery.
   */
  abandon(): Promise<void> {
    this.stopped ??= this.halt();
    return this.stopped;
  }

  private async halt(): Promise<void> {
    this.running = false;
    for (const { controller } of this.inFlight.values()) controller.abort();
    this.wakeUp?.();
    await this.loop;
    await Promise.all([...this.inFlight.values()].map(({ done }) => done));
  }

  private async run(): Promise<void> {
    const concurrency = this.options.concurrency ?? 64;
    while (this.running) {
      this.pendingWake = false;
      try {
        while (this.running && this.inFlight.size < concurrency) {
          const claimed = await this.repository.claim(this.workerId, this.options.leaseMs);
          if (!claimed || !this.running) break;
          this.perform(claimed);
        }
      } catch (error) {
        this.options.onError?.(error, 'claiming work');
      }
      if (!this.running) break;
      if (this.pendingWake && this.inFlight.size < concurrency) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.pollMs);
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeUp = undefined;
    }
  }

  private perform(row: ClaimedWorkRow): void {
    const controller = new AbortController();
    const work: Work = {
      operationId: row.id,
      kind: row.kind,
      payload: row.payload,
      resourceId: row.resource_id,
      parentId: row.parent_id,
      attempt: row.attempts,
    };
    const done = this.execute(work, controller.signal)
      .catch((error: unknown) => this.options.onError?.(error, `operation ${work.operationId}`))
      .finally(() => {
        this.inFlight.delete(work.operationId);
        if (this.running) this.wake();
      });
    this.inFlight.set(row.id, { controller, done });
  }

  private async execute(work: Work, signal: AbortSignal): Promise<void> {
    const renewEvery = Math.max(50, Math.floor(this.options.leaseMs / 3));
    const renewal = setInterval(() => {
      void this.repository.renew(work.operationId, this.workerId, this.options.leaseMs).catch(() => undefined);
    }, renewEvery);
    try {
      if (!(await delay(this.options.workMs, signal))) return;
    } finally {
      clearInterval(renewal);
    }
    const handler = this.options.handlers[work.kind];
    const knex = this.options.knex;
    let failure: unknown;
    let finished = false;
    try {
      finished = await knex.transaction(async (trx) => {
        if (!(await this.repository.lockClaimed(work.operationId, this.workerId, trx))) return false;
        if (!handler) throw new Error(`no handler for work kind ${work.kind}`);
        await handler.complete(trx, work);
        await this.repository.finish(work.operationId, okStatus(), trx);
        return true;
      });
    } catch (error) {
      failure = error;
    }
    if (failure !== undefined) {
      if (signal.aborted) return;
      finished = await knex.transaction(async (trx) => {
        if (!(await this.repository.lockClaimed(work.operationId, this.workerId, trx))) return false;
        await handler?.fail?.(trx, work, failure);
        await this.repository.finish(work.operationId, this.options.failureStatus(failure, work), trx);
        return true;
      });
      this.options.onError?.(failure, `operation ${work.operationId} failed`);
    }
    if (finished) this.emit('finished', work.operationId);
  }
}

/** Resolves true after `ms`, or false as soon as the signal aborts. */
function delay(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
