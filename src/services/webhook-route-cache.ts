import type { RouteRow } from '../store/repositories/webhook-repository.js';

interface Entry {
  route: RouteRow | null;
  loadedAt: number;
}

/**
 * Route lookups for the capture path without a database query per request. An entry is trusted for
 * `maxAgeMs` (default 1 s) and then loaded again; expiry is checked against the cached `expiresAt`
 * on every use. A route deleted on another process may therefore look live here for at most
 * `maxAgeMs` (less when its NOTIFY arrives) — but nothing is stored for it meanwhile: the group
 * commit re-checks the route row inside its transaction and the sender gets 404.
 */
export class RouteCache {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<RouteRow | null>>();

  constructor(
    private readonly load: (id: string) => Promise<RouteRow | undefined>,
    private readonly maxAgeMs = 1000,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The live route, or null; synchronous when the entry is fresh (the common case under load). */
  lookup(id: string): RouteRow | null | Promise<RouteRow | null> {
    const entry = this.entries.get(id);
    const now = this.now();
    if (entry && now - entry.loadedAt < this.maxAgeMs) return live(entry.route, now);
    let pending = this.loading.get(id);
    if (!pending) {
      pending = this.load(id).then(
        (route) => {
          this.loading.delete(id);
          this.remember(id, route ?? null);
          return route ?? null;
        },
        (error: unknown) => {
          this.loading.delete(id);
          throw error;
        },
      );
      this.loading.set(id, pending);
    }
    return pending.then((route) => live(route, this.now()));
  }

  /** Records a route this process just created, so its first captures need no query. */
  remember(id: string, route: RouteRow | null): void {
    if (this.entries.size >= this.maxEntries) {
      // Unknown ids are cached too (a flood of random UUIDs must not become a flood of queries);
      // dropping the oldest tenth keeps memory bounded without an LRU's bookkeeping per hit.
      let drop = Math.ceil(this.maxEntries / 10);
      for (const key of this.entries.keys()) {
        if (drop-- <= 0) break;
        this.entries.delete(key);
      }
    }
    this.entries.delete(id);
    this.entries.set(id, { route, loadedAt: this.now() });
  }

  /**
   * Forgets every route (the LISTEN connection was lost: deletions announced meanwhile were
   * missed, so nothing cached can be trusted).
   */
  clear(): void {
    this.entries.clear();
  }

  /** Forgets a route at once (deleted here, or a NOTIFY said another process deleted or swept it). */
  invalidate(id: string): void {
    this.entries.set(id, { route: null, loadedAt: this.now() });
  }
}

function live(route: RouteRow | null, now: number): RouteRow | null {
  return route && route.expiresAt.getTime() > now ? route : null;
}
