import type { RouteRow } from '../../store/repositories/webhook-repository.js';
import { defaultOf } from '../../settings/table.js';

interface Entry {
  route: RouteRow | null;
  loadedAt: number;
  /** Estimated heap bytes of the entry (see `entryBytes`). */
  bytes: number;
}

/**
 * Route lookups for the capture path without a database query per request. An entry is trusted for
 * `maxAgeMs` (default 1 s) and then loaded again; expiry is checked against the cached `expiresAt`
 * on every use. A route deleted on another process may therefore look live here for at most
 * `maxAgeMs` (less when its NOTIFY arrives) — but nothing is stored for it meanwhile: the group
 * commit re-checks the route row inside its transaction and the sender gets 404.
 *
 * The cache is bounded by entries and by estimated bytes (a route's configured response may carry a
 * 64 KB body and 50 headers, so a count alone let a flood of such routes pin gigabytes): it is a
 * least-recently-used list — a hit moves the entry to the end, and the front is dropped first.
 */
export class RouteCache {
  /** In least-recently-used order (Map iteration is insertion order). */
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<RouteRow | null>>();
  private bytes = 0;

  constructor(
    private readonly load: (id: string) => Promise<RouteRow | undefined>,
    private readonly maxAgeMs = 1000,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
    private readonly maxBytes = defaultOf('webhookRouteCacheBytes'),
  ) {}

  /** The live route, or null; synchronous when the entry is fresh (the common case under load). */
  lookup(id: string): RouteRow | null | Promise<RouteRow | null> {
    const entry = this.entries.get(id);
    const now = this.now();
    if (entry && now - entry.loadedAt < this.maxAgeMs) {
      this.entries.delete(id);
      this.entries.set(id, entry);
      return live(entry.route, now);
    }
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
    this.forget(id);
    const entry = { route, loadedAt: this.now(), bytes: entryBytes(id, route) };
    // Unknown ids are cached too (a flood of random UUIDs must not become a flood of queries).
    for (const [oldest] of this.entries) {
      if (this.entries.size < this.maxEntries && this.bytes + entry.bytes <= this.maxBytes) break;
      this.forget(oldest);
    }
    // A single entry larger than the whole budget is not kept at all.
    if (entry.bytes > this.maxBytes) return;
    this.entries.set(id, entry);
    this.bytes += entry.bytes;
  }

  /** Estimated bytes held now (for tests and metrics). */
  get heldBytes(): number {
    return this.bytes;
  }

  /**
   * Forgets every route (the LISTEN connection was lost: deletions announced meanwhile were
   * missed, so nothing cached can be trusted).
   */
  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  /** Forgets a route at once (deleted here, or a NOTIFY said another process deleted or swept it). */
  invalidate(id: string): void {
    this.remember(id, null);
  }

  private forget(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    this.bytes -= entry.bytes;
  }
}

/**
 * A generous estimate of what an entry keeps alive: the Map slot, the row and its dates, and the
 * configured response's strings at two bytes per character (V8 stores non-Latin-1 text as UTF-16).
 */
function entryBytes(id: string, route: RouteRow | null): number {
  let bytes = 200 + 2 * id.length;
  if (route?.response) {
    bytes += 100 + 2 * route.response.body.length;
    for (const [name, value] of Object.entries(route.response.headers)) bytes += 64 + 2 * (name.length + value.length);
  }
  return bytes;
}

function live(route: RouteRow | null, now: number): RouteRow | null {
  return route && route.expiresAt.getTime() > now ? route : null;
}
