import { AppError } from '../../errors.js';
import { clientKey } from '../client-address.js';

export interface RouteCreationLimitOptions {
  /** Routes one client may create per window. */
  maxPerWindow: number;
  windowSeconds: number;
  /** Clients tracked at once; beyond it the oldest windows are forgotten (memory stays bounded). */
  maxClients?: number;
  now?: () => number;
}

interface Window {
  startedAt: number;
  count: number;
}

/**
 * How many routes each client address may create per window (fixed windows, in this process).
 * Route creation is anonymous — the route id is the capability — so the address is the only handle
 * on a client that floods it (counted by `clientKey`: IPv6 per /64).
 */
export class RouteCreationLimit {
  private readonly windows = new Map<string, Window>();
  private readonly maxClients: number;
  private readonly now: () => number;

  constructor(private readonly options: RouteCreationLimitOptions) {
    this.maxClients = options.maxClients ?? 100_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * Takes one creation from `address`'s allowance, or throws `resource_exhausted` (429) with the
   * seconds until the window ends. Answers a function that gives it back (the creation failed).
   */
  take(address: string | undefined): () => void {
    const key = clientKey(address);
    const now = this.now();
    const windowMs = this.options.windowSeconds * 1000;
    let window = this.windows.get(key);
    if (!window || now - window.startedAt >= windowMs) {
      this.windows.delete(key);
      this.makeRoom(now, windowMs);
      window = { startedAt: now, count: 0 };
      this.windows.set(key, window);
    }
    if (window.count >= this.options.maxPerWindow) {
      const retryAfterSeconds = Math.max(1, Math.ceil((window.startedAt + windowMs - now) / 1000));
      throw new AppError(
        'resource_exhausted',
        `Too many routes created from this address; at most ${this.options.maxPerWindow} per ${this.options.windowSeconds} s.`,
        { retryAfterSeconds },
      );
    }
    window.count++;
    const taken = window;
    return () => {
      if (taken.count > 0) taken.count--;
    };
  }

  /** Drops ended windows, then (if still full) the oldest ones; windows are kept in start order. */
  private makeRoom(now: number, windowMs: number): void {
    if (this.windows.size < this.maxClients) return;
    for (const [key, window] of this.windows) {
      if (this.windows.size < this.maxClients * 0.9 && now - window.startedAt < windowMs) break;
      this.windows.delete(key);
    }
  }
}
