import type { CapturedRecord } from '../../engines/webhook-capture/index.js';
import type { BatchResult } from '../../store/repositories/webhook-repository.js';

/** What happened to one capture: stored (committed), or its route was gone at commit time. */
export type CaptureOutcome = 'stored' | 'route_gone';

interface Pending {
  record: CapturedRecord;
  resolve(outcome: CaptureOutcome): void;
  reject(error: unknown): void;
}

export interface CaptureWriterOptions {
  store(records: readonly CapturedRecord[]): Promise<BatchResult>;
  /** A batch is written at the latest this long after its first capture arrived. */
  batchMs: number;
  /** …or as soon as it holds this many captures. */
  batchRows: number;
  /** Batches written concurrently (default 1). */
  maxInFlight?: number;
  onError?(error: unknown): void;
}

/**
 * Group commit for captures: requests arriving together share one multi-row INSERT, and each sender
 * is answered only after its row is committed, so an acknowledged capture is never lost. Up to
 * `maxInFlight` batches are written at once (1 on PGlite's single connection); while they commit
 * the next batch fills, so batch size grows with load and latency stays about one commit.
 *
 * The `batchMs` wait gathers captures only after a quiet spell. Under load (a batch finished less
 * than `batchMs` ago) the next batch starts once the event loop has read the requests already
 * waiting (setImmediate): on PGlite a commit blocks the thread, so the requests that arrived
 * meanwhile are all read in the next poll phase, and waiting out a timer after that only left the
 * process idle (~20% of the capture benchmark's time). `stop()` writes what is queued.
 */
export class CaptureWriter {
  private queue: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private readonly idle = new Set<() => void>();
  private stopped = false;
  private readonly batchObservers: Array<(batch: CommittedBatch) => void> = [];
  private lastBatchEnded = -Infinity;
  private immediate: NodeJS.Immediate | undefined;

  constructor(private readonly options: CaptureWriterOptions) {}

  /** Tells `observer` what every committed batch stored (the capture metrics). */
  observeBatches(observer: (batch: CommittedBatch) => void): void {
    this.batchObservers.push(observer);
  }

  /** Queues a capture; resolves once it is committed (or its route turned out to be gone). */
  write(record: CapturedRecord): Promise<CaptureOutcome> {
    if (this.stopped) return Promise.reject(new Error('capture writer stopped'));
    return new Promise<CaptureOutcome>((resolve, reject) => {
      this.queue.push({ record, resolve, reject });
      this.schedule();
    });
  }

  /** Writes everything queued and refuses new captures; called on graceful shutdown. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelWait();
    while (this.queue.length > 0 || this.inFlight > 0) {
      if (this.inFlight < this.maxInFlight && this.queue.length > 0) this.startBatch();
      else await new Promise<void>((resolve) => this.idle.add(resolve));
    }
  }

  private get maxInFlight(): number {
    return this.options.maxInFlight ?? 1;
  }

  private schedule(): void {
    if (this.queue.length === 0 || this.inFlight >= this.maxInFlight) return; // a finishing batch picks the queue up
    if (this.queue.length >= this.options.batchRows || this.options.batchMs === 0) {
      this.startBatch();
    } else if (!this.timer && !this.immediate) {
      const start = () => {
        this.timer = undefined;
        this.immediate = undefined;
        if (this.inFlight < this.maxInFlight) this.startBatch();
      };
      if (performance.now() - this.lastBatchEnded < this.options.batchMs) this.immediate = setImmediate(start);
      else this.timer = setTimeout(start, this.options.batchMs);
    }
  }

  private cancelWait(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private startBatch(): void {
    this.cancelWait();
    const batch = this.queue.splice(0, this.options.batchRows);
    if (batch.length === 0) return;
    this.inFlight++;
    void this.writeBatch(batch).finally(() => {
      this.inFlight--;
      this.lastBatchEnded = performance.now();
      for (const resolve of this.idle) resolve();
      this.idle.clear();
      // Group commit: whatever queued up while this batch committed goes out at once.
      if (this.queue.length > 0 && this.inFlight < this.maxInFlight) this.startBatch();
    });
  }

  private async writeBatch(batch: Pending[]): Promise<void> {
    const records = batch.map((pending) => pending.record);
    let result: BatchResult | undefined;
    let failure: unknown;
    for (let attempt = 0; attempt < 3 && !result; attempt++) {
      try {
        result = await this.options.store(records);
      } catch (error) {
        failure = error;
        if (!isRetryable(error)) break;
      }
    }
    if (!result) {
      this.options.onError?.(failure);
      for (const pending of batch) pending.reject(failure);
      return;
    }
    if (this.batchObservers.length > 0) {
      const committed: CommittedBatch = { size: batch.length, stored: result.stored, truncated: 0, dropped: result.dropped };
      for (const pending of batch) if (pending.record.truncated && result.liveRoutes.has(pending.record.routeId)) committed.truncated++;
      for (const observe of this.batchObservers) observe(committed);
    }
    for (const pending of batch) pending.resolve(result.liveRoutes.has(pending.record.routeId) ? 'stored' : 'route_gone');
  }
}

/** What one committed batch did: its captures, those stored (their route still live), truncated ones among them, older captures dropped. */
export interface CommittedBatch {
  size: number;
  stored: number;
  truncated: number;
  dropped: number;
}

/**
 * Safe to retry as a whole: a deadlock or serialization failure between processes (batches lock
 * their routes' rows), or a foreign-key failure on a route deleted meanwhile (the retry then skips
 * that route). The statement now locks its routes before it inserts, so that failure should not
 * happen any more; it stays retryable because a retry of it is safe.
 */
function isRetryable(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null && 'code' in error ? (error as { code: unknown }).code : undefined;
  return code === '40P01' || code === '40001' || code === '23503';
}
