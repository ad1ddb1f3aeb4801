import type { CapturedRecord } from '../engines/webhook-capture/index.js';
import type { BatchResult } from '../store/repositories/webhook-repository.js';

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
  onError?(error: unknown): void;
}

/**
 * Group commit for captures: requests arriving together share one transaction and one multi-row
 * INSERT, and each sender is answered only after its row is committed, so an acknowledged capture
 * is never lost. One batch is in flight at a time; while it commits the next one fills, so batch
 * size grows with load and latency stays about one commit. `stop()` writes what is queued.
 */
export class CaptureWriter {
  private queue: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: CaptureWriterOptions) {}

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
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.flushing || this.queue.length > 0) {
      await (this.flushing ?? this.flush());
    }
  }

  private schedule(): void {
    if (this.flushing) return; // the running flush picks the queue up when it ends
    if (this.queue.length >= this.options.batchRows || this.options.batchMs === 0) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      void this.flush();
    } else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, this.options.batchMs);
    }
  }

  private flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    this.flushing = (async () => {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.options.batchRows);
        await this.writeBatch(batch);
      }
    })().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
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
        // Deadlock or serialization failure between processes: the whole batch is safe to retry.
        if (!isRetryable(error)) break;
      }
    }
    if (!result) {
      this.options.onError?.(failure);
      for (const pending of batch) pending.reject(failure);
      return;
    }
    for (const pending of batch) pending.resolve(result.liveRoutes.has(pending.record.routeId) ? 'stored' : 'route_gone');
  }
}

function isRetryable(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null && 'code' in error ? (error as { code: unknown }).code : undefined;
  return code === '40P01' || code === '40001';
}
