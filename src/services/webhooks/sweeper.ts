import type { WebhookRepository } from '../../store/repositories/webhook-repository.js';

export interface SweeperOptions {
  /** Expired routes taken per round (default 100). */
  batch?: number;
  /** Captures deleted per statement (default 500). */
  chunk?: number;
}

/**
 * Deletes expired routes and their captures every `intervalMs`. Captures go first, in chunks of at
 * most `chunk` rows per statement (each its own short transaction), so a backlog of millions never
 * becomes one long transaction holding locks; the routes, then empty, go last. Each process runs
 * one; rows and routes are claimed with `SKIP LOCKED`, so processes sweeping at once split the work.
 */
export class WebhookSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private readonly batch: number;
  private readonly chunk: number;

  constructor(
    private readonly repository: WebhookRepository,
    private readonly intervalMs: number,
    private readonly onError: (error: unknown) => void = () => undefined,
    options: SweeperOptions = {},
  ) {
    this.batch = options.batch ?? 100;
    this.chunk = options.chunk ?? 500;
  }

  start(): void {
    this.timer = setInterval(() => {
      void this.sweepOnce().catch(this.onError);
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** Sweeps until no expired route is left unclaimed; answers how many routes this process deleted. */
  sweepOnce(): Promise<number> {
    this.running ??= (async () => {
      let total = 0;
      for (;;) {
        const expired = await this.repository.expiredRoutes(this.batch);
        if (expired.length === 0) return total;
        while ((await this.repository.deleteExpiredCaptures(expired, this.chunk)) === this.chunk) {
          // another full chunk may be left
        }
        const deleted = await this.repository.deleteExpiredRoutes(expired);
        total += deleted.length;
        // Routes another sweeper holds are its work; stop rather than spin on them.
        if (deleted.length === 0 || expired.length < this.batch) return total;
      }
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }
}
