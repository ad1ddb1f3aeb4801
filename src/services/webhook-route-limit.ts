import { isIPv6 } from 'node:net';
import { AppError } from '../errors.js';

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
 * on a client that floods it. IPv6 clients are counted per /64, the block one subscriber usually gets,
 * so rotating through addresses of one block does not multiply the allowance.
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
      throw new AppError('resource_exhausted', `Too many routes created from this address; at most ${this.options.maxPerWindow} per ${this.options.windowSeconds} s.`, { retryAfterSeconds });
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

/** The address a limit counts: IPv4 as is (also when IPv4-mapped), IPv6 by its /64 prefix. */
export function clientKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
}

function expandIPv6(address: string): string[] {
  const [head = '', tail] = address.split('%', 1)[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = Math.max(0, 8 - left.length - right.length);
  return [...left, ...Array.from({ length: missing }, () => '0'), ...right].map((group) => group.toLowerCase().replace(/^0+(?=.)/, ''));
}
