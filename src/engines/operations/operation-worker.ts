import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { OperationRepository, type CancelTarget, type ClaimedWorkRow } from '../../store/repositories/operation-repository.js';
import { cancelledStatus, okStatus, progressData } from './operation-message.js';

/**
 * Completions and cancel requests of operations, announced to every process: `done:<id>` wakes the
 * waiters of OperationService.Wait, `cancel:<id>` tells the process holding the work to stop.
 */
export const OPERATION_EVENTS_CHANNEL = 'cloud_operation_events';

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
 * ends with the failure status. `cancel` undoes what the mutation did (OperationService.Cancel), in
 * the transaction that completes the operation CANCELLED; `phases` name the steps of the simulated
 * work, shown in the operation's progress.
 */
export interface WorkHandler {
  complete(trx: Knex, work: Work): Promise<void>;
  fail?(trx: Knex, work: Work, error: unknown): Promise<void>;
  /** Absent when the mutation changes nothing before its work completes (nothing to undo). */
  cancel?(trx: Knex, work: Work): Promise<void>;
  phases?: readonly string[];
}

/** What OperationService.Cancel did: undid the work itself, or asked the process holding it. */
export type CancelOutcome = { kind: 'cancelled' } | { kind: 'requested' } | { kind: 'finished'; status: Uint8Array };

/** Progress is written at most this often per operation (and at most 10 times over its work). */
const PROGRESS_MIN_INTERVAL_MS = 100;

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
  /** The google.rpc.Status of a cancelled operation (code CANCELLED; by default without details). */
  cancelledStatus?(work: Work): Uint8Array;
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
  private readonly inFlight = new Map<string, { controller: AbortController; cancel: AbortController; done: Promise<void> }>();
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

  /** A cancel was requested for an operation (NOTIFY from any process): its work here stops now. */
  cancelRequested(operationId: string): void {
    this.inFlight.get(operationId)?.cancel.abort();
  }

  /**
   * OperationService.Cancel, in one transaction over the locked operation: `check` (access) runs
   * first; a finished operation is answered as it is; work that no live claim holds (pending, or
   * its holder's lease ran out) is undone here and completed CANCELLED; work another worker holds
   * gets the request recorded and announced, and that worker stops at its next safe point.
   * Undefined when no such operation exists.
   */
  async cancel(operationId: string, check: (target: CancelTarget) => void): Promise<CancelOutcome | undefined> {
    return this.options.knex.transaction(async (trx) => {
      const target = await this.repository.lockForCancel(operationId, trx);
      if (!target) return undefined;
      check(target);
      if (target.status) return { kind: 'finished', status: target.status } as const;
      await this.repository.requestCancel(operationId, trx);
      if (target.held || target.kind === null) {
        await trx.raw('SELECT pg_notify(?, ?)', [OPERATION_EVENTS_CHANNEL, `cancel:${operationId}`]);
        return { kind: 'requested' } as const;
      }
      const work: Work = { ...target, kind: target.kind, operationId, resourceId: target.resource_id, parentId: target.parent_id, attempt: target.attempts };
      await this.undo(trx, work);
      return { kind: 'cancelled' } as const;
    });
  }

  /** Undoes the work's mutation and completes its operation CANCELLED, in `trx`. */
  private async undo(trx: Knex, work: Work): Promise<void> {
    const handler = this.options.handlers[work.kind];
    if (!handler) throw new Error(`no handler for work kind ${work.kind}`);
    await handler.cancel?.(trx, work);
    await this.repository.finish(work.operationId, this.options.cancelledStatus?.(work) ?? cancelledStatus(), trx);
    await announceDone(trx, work.operationId);
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
    const cancel = new AbortController();
    const work: Work = {
      operationId: row.id,
      kind: row.kind,
      payload: row.payload,
      resourceId: row.resource_id,
      parentId: row.parent_id,
      attempt: row.attempts,
    };
    const done = this.execute(work, controller.signal, cancel.signal)
      .catch((error: unknown) => this.options.onError?.(error, `operation ${work.operationId}`))
      .finally(() => {
        this.inFlight.delete(work.operationId);
        if (this.running) this.wake();
      });
    this.inFlight.set(row.id, { controller, cancel, done });
  }

  /**
   * The simulated work, then its completion. While it runs, one statement per tick renews the claim,
   * records the progress and reads whether a cancel was requested (the safe points: every tick, and
   * the completing transaction, which undoes the work instead when a cancel came meanwhile). A cancel
   * announced through NOTIFY stops the work at once.
   */
  private async execute(work: Work, signal: AbortSignal, cancel: AbortSignal): Promise<void> {
    const handler = this.options.handlers[work.kind];
    const { workMs, leaseMs } = this.options;
    const started = Date.now();
    const renewEvery = Math.max(50, Math.floor(leaseMs / 3));
    const tickEvery = Math.min(renewEvery, Math.max(PROGRESS_MIN_INTERVAL_MS, Math.floor(workMs / 10)));
    const stop = AbortSignal.any([signal, cancel]);
    const cancelled = new AbortController();
    let lastRenewal = started;
    const ticker = setInterval(() => {
      const now = Date.now();
      const progress = workMs > 0 ? progressData(Math.min(99, Math.floor(((now - started) / workMs) * 100)), handler?.phases) : undefined;
      if (!progress && now - lastRenewal < renewEvery) return;
      lastRenewal = now;
      this.repository
        .renew(work.operationId, this.workerId, leaseMs, progress)
        .then((claim) => {
          if (claim === 'cancel') cancelled.abort();
        })
        .catch(() => undefined);
    }, tickEvery);
    try {
      if (!(await delay(workMs, AbortSignal.any([stop, cancelled.signal]))) && signal.aborted) return;
    } finally {
      clearInterval(ticker);
    }
    const knex = this.options.knex;
    let failure: unknown;
    let finished = false;
    try {
      finished = await knex.transaction(async (trx) => {
        const claim = await this.repository.lockClaimed(work.operationId, this.workerId, trx);
        if (!claim) return false;
        if (claim.cancelRequested) {
          await this.undo(trx, work);
          return true;
        }
        if (!handler) throw new Error(`no handler for work kind ${work.kind}`);
        await handler.complete(trx, work);
        await this.repository.finish(work.operationId, okStatus(), trx, progressData(100, handler.phases, true));
        await announceDone(trx, work.operationId);
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
        await announceDone(trx, work.operationId);
        return true;
      });
      this.options.onError?.(failure, `operation ${work.operationId} failed`);
    }
    if (finished) this.emit('finished', work.operationId);
  }
}

/** Tells every process's waiters, when `trx` commits, that the operation completed. */
function announceDone(trx: Knex, operationId: string): Promise<unknown> {
  return trx.raw('SELECT pg_notify(?, ?)', [OPERATION_EVENTS_CHANNEL, `done:${operationId}`]);
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
