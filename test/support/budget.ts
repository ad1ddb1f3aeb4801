import { availableParallelism, loadavg } from 'node:os';

/**
 * How much slower than on a quiet host work runs right now: the runnable processes per core over the
 * last minute, at least 1. On a 2-core machine shared with other builds it reaches 4 and more, and a
 * server's cold start (PGlite load, build, listen) stretches by as much.
 */
export function slowdown(): number {
  return Math.max(1, (loadavg()[0] ?? 0) / availableParallelism());
}

/** Headroom over the slowest quiet run measured: timer jitter, GC, a cold file cache. */
const MARGIN = 3;

/**
 * A timeout for work that takes at most `quietMs` on a quiet 2-core host, scaled by the load when the
 * test file starts (when jest reads its timeouts). A hang still fails; a busy machine does not.
 */
export function budget(quietMs: number): number {
  return Math.round(quietMs * MARGIN * slowdown());
}
