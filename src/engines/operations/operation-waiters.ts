import { AppError } from '../../errors.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';

export interface OperationWaitersOptions {
  /** The operations among `ids` that exist (one query for every waiter of those ids). */
  load(ids: readonly string[]): Promise<OperationRow[]>;
  /** Waiters held at once by this process; one more is refused with RESOURCE_EXHAUSTED. */
  maxWaiters: number;
  onError?(error: unknown): void;
}

/** One pending wait: settled with the completed operation, or with undefined (timeout, shutdown, a failed read). */
interface Waiter {
  settle(row: OperationRow | undefined): void;
}

/** A registered wait, as OperationService.Wait holds it. */
export interface WaitTicket {
  /** Settles with the completed operation, or undefined after `timeoutMs`, on `signal`'s abort or at shutdown. */
  until(timeoutMs: number, signal?: AbortSignal): Promise<OperationRow | undefined>;
  /** Gives the slot back; always called, also when the wait was never started. */
  release(): void;
}

/**
 * The waiters of OperationService.Wait (and Cancel) in one process: every waiter is an entry in a
 * map by operation id, woken by the process's one LISTEN (`done:<id>` on the operation events
 * channel, from whichever process completed it) — no query per waiter while it waits, and one read
 * of a completed operation however many wait for it. A caller registers (`add`) before it reads the
 * operation, so a completion between its read and its wait is not missed. Bounded: `maxWaiters` at
 * once (each a map entry and a timer, a few hundred bytes besides its request), beyond it
 * RESOURCE_EXHAUSTED.
 */
export class OperationWaiters {
  private readonly byId = new Map<string, Set<Waiter>>();
  private count = 0;
  /** Set at shutdown: every wait, also one registered later, answers at once. */
  private closed = false;
  /** Reads asked for in this turn of the event loop, made together in the next one (see `read`). */
  private batch: Map<string, Array<{ resolve(row: OperationRow | undefined): void; reject(error: unknown): void }>> | undefined;

  constructor(private readonly options: OperationWaitersOptions) {}

  /** Waiters held now. */
  get size(): number {
    return this.count;
  }

  /** Whether one more wait would be refused. */
  get full(): boolean {
    return this.count >= this.options.maxWaiters;
  }

  /** Registers a wait for `id` (before reading it); throws RESOURCE_EXHAUSTED when the process holds `maxWaiters` already. */
  add(id: string): WaitTicket {
    if (this.count >= this.options.maxWaiters) {
      throw new AppError('resource_exhausted', `this server already holds ${this.options.maxWaiters} waits; retry later or poll OperationService.Get`, {
        retryAfterSeconds: 1,
        detail: { kind: 'too_many_requests', violation: `at most ${this.options.maxWaiters} OperationService.Wait calls at once per server process` },
      });
    }
    this.count++;
    let pending: ((row: OperationRow | undefined) => void) | undefined;
    let early: { row: OperationRow | undefined } | undefined = this.closed ? { row: undefined } : undefined;
    const waiter: Waiter = {
      settle: (row) => {
        if (pending) pending(row);
        else early ??= { row };
      },
    };
    let set = this.byId.get(id);
    if (!set) {
      set = new Set();
      this.byId.set(id, set);
    }
    set.add(waiter);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.count--;
      const waiters = this.byId.get(id);
      waiters?.delete(waiter);
      if (waiters?.size === 0) this.byId.delete(id);
    };
    return {
      release,
      until: (timeoutMs, signal) => {
        if (early) return Promise.resolve(early.row);
        return new Promise<OperationRow | undefined>((resolve) => {
          const done = (row: OperationRow | undefined) => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', onAbort);
            pending = undefined;
            resolve(row);
          };
          const onAbort = () => done(undefined);
          const timer = setTimeout(() => done(undefined), Math.max(0, timeoutMs));
          signal?.addEventListener('abort', onAbort, { once: true });
          if (signal?.aborted) onAbort();
          pending = done;
        });
      },
    };
  }

  /**
   * Reads an operation for a waiter that registered already: the reads asked for within one turn of
   * the event loop are made in one query at the next (`setImmediate`), so a burst of waiters costs a
   * few queries, not one each. Each read starts after its caller registered, so a completion it does
   * not see is announced to that caller.
   */
  read(id: string): Promise<OperationRow | undefined> {
    if (!this.batch) {
      const batch = new Map<string, Array<{ resolve(row: OperationRow | undefined): void; reject(error: unknown): void }>>();
      this.batch = batch;
      setImmediate(() => {
        this.batch = undefined;
        this.options.load([...batch.keys()]).then(
          (rows) => {
            const found = new Map(rows.map((row) => [row.id, row]));
            for (const [key, callers] of batch) for (const caller of callers) caller.resolve(found.get(key));
          },
          (error: unknown) => {
            for (const callers of batch.values()) for (const caller of callers) caller.reject(error);
          },
        );
      });
    }
    const batch = this.batch;
    return new Promise((resolve, reject) => {
      const callers = batch.get(id) ?? [];
      callers.push({ resolve, reject });
      batch.set(id, callers);
    });
  }

  /** A payload of the operation events channel: `done:<id>` wakes that operation's waiters. */
  onEvent(payload: string): void {
    if (!payload.startsWith('done:')) return;
    const id = payload.slice('done:'.length);
    if (this.byId.has(id)) void this.wake([id]);
  }

  /**
   * The LISTEN connection came back (PostgreSQL): completions announced while it was down were
   * missed, so every waited operation is read again (one query).
   */
  resync(): void {
    const ids = [...this.byId.keys()];
    if (ids.length > 0) void this.wake(ids);
  }

  /** Shutdown: every waiter answers now (with the operation's current state), and so do later ones. */
  close(): void {
    this.closed = true;
    for (const waiters of this.byId.values()) for (const waiter of waiters) waiter.settle(undefined);
  }

  private async wake(ids: string[]): Promise<void> {
    let rows: OperationRow[];
    try {
      rows = (await this.options.load(ids)).filter((row) => row.status !== null);
    } catch (error) {
      // The waiters answer the state they read themselves at their timeout.
      this.options.onError?.(error);
      return;
    }
    for (const row of rows) for (const waiter of this.byId.get(row.id) ?? []) waiter.settle(row);
  }
}
