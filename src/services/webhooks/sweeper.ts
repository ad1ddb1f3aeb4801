import type { WebhookRepository } from '../../store/repositories/webhook-repository.js';

/**
 * Deletes expired routes and their captures every `intervalMs`. Each process runs one; routes are
 * claimed with `FOR UPDATE SKIP LOCKED`, so processes sweeping at the same moment split the work.
 */
export class WebhookSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(
    private readonly repository: WebhookRepository,
    private readonly intervalMs: number,
    private readonly onError: (error: unknown) => void = () => undefined,
    private readonly batch = 100,
  ) {}

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
        const ids = await this.repository.sweepExpired(this.batch);
        total += ids.length;
        if (ids.length < this.batch) return total;
      }
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }
}
