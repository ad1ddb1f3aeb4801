import type { Database } from '../store/database.js';
import { isDatabaseUnavailable, isStorageFull, STORAGE_FULL_RETRY_AFTER_SECONDS, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../errors.js';

/** What one check says: ready, or not and why. `value` is what `/readyz` shows under the check's name. */
export type CheckOutcome = { ok: true; value: string } | { ok: false; value: string; retryAfterSeconds?: number };

/**
 * One condition of readiness (`database`, `listener`, `storage`, a schema check…). `check` answers
 * from state the server already keeps; it may await a bounded re-check while the condition fails
 * (so recovery shows at once), never a database write while all is well.
 */
export interface ReadinessCheck {
  /** The field of `/readyz`'s body that shows this check. */
  name: string;
  check(): CheckOutcome | Promise<CheckOutcome>;
}

export interface ReadinessStatus {
  ready: boolean;
  /** `/readyz`'s body: `status`, then each check's value by name. */
  body: Record<string, string>;
  /** When not ready: how long a client should wait before it tries again. */
  retryAfterSeconds?: number;
}

const OK: CheckOutcome = Object.freeze({ ok: true, value: 'ok' });

/**
 * Whether this server should be sent traffic: `/readyz` and the gRPC health service both ask it.
 * A small list of named checks (add one with `readiness.add({ name, check })`); once shutdown begins
 * the answer is "shutting down" at once, without asking any check.
 */
export class Readiness {
  private readonly checks: ReadinessCheck[] = [];
  private stopping = false;

  add(check: ReadinessCheck): this {
    this.checks.push(check);
    return this;
  }

  /** Shutdown began: never ready again. */
  shutDown(): void {
    this.stopping = true;
  }

  get shuttingDown(): boolean {
    return this.stopping;
  }

  async status(): Promise<ReadinessStatus> {
    if (this.stopping) return { ready: false, body: { status: 'shutting down' } };
    const outcomes = await Promise.all(this.checks.map((check) => check.check()));
    const failed = outcomes.filter((outcome) => !outcome.ok);
    const body: Record<string, string> = { status: failed.length === 0 ? 'ready' : 'not ready' };
    this.checks.forEach((check, at) => (body[check.name] = outcomes[at]!.value));
    if (failed.length === 0) return { ready: true, body };
    const retryAfterSeconds = Math.max(...failed.map((outcome) => (outcome.ok ? 0 : (outcome.retryAfterSeconds ?? UNAVAILABLE_RETRY_AFTER_SECONDS))));
    return { ready: false, body, retryAfterSeconds };
  }
}

export interface StoreChecksOptions {
  /** A statement that succeeded within this long ago counts as a database that answers (no probe). */
  freshMs?: number;
  /** A probe (`select 1`) with no answer within this counts as a database that is down. */
  probeTimeoutMs?: number;
}

/**
 * The store's readiness, from what its queries already tell: `database` is ok while some statement
 * succeeded within `freshMs` (any request's, seen through knex's `query-response`); only an idle or
 * failing server asks `select 1`, at most one at a time, so probes from any number of balancers cost
 * at most one read per `freshMs` and none under traffic. `listener` is the LISTEN connection's own
 * heartbeat. `storage` turns `full` when a statement fails for lack of space, or (PGlite) when the
 * store's disk-space guard says a write would not fit; while it is, each probe re-checks with the
 * store's one small write, so freed space shows at once.
 */
export function storeChecks(db: Database, options: StoreChecksOptions = {}): { checks: ReadinessCheck[]; detach(): void } {
  const freshMs = options.freshMs ?? 1000;
  const probeTimeoutMs = options.probeTimeoutMs ?? 1000;
  let answeredAt = performance.now();
  let storageFull = false;
  const onAnswer = () => (answeredAt = performance.now());
  const onError = (error: unknown) => {
    if (isStorageFull(error)) storageFull = true;
    // A statement refused for the connection's sake: the next probe asks instead of trusting older answers.
    else if (isDatabaseUnavailable(error)) answeredAt = -Infinity;
  };
  db.knex.on('query-response', onAnswer);
  db.knex.on('query-error', onError);

  const probe = new SingleFlight(async () => {
    await db.knex.raw('select 1');
    return true;
  }, probeTimeoutMs);
  const storageProbe = new SingleFlight(async () => (await db.storage()) === 'ok', probeTimeoutMs);

  const database: ReadinessCheck = {
    name: 'database',
    async check() {
      if (performance.now() - answeredAt < freshMs) return OK;
      return (await probe.run()) ? OK : { ok: false, value: 'unreachable' };
    },
  };
  const listener: ReadinessCheck = {
    name: 'listener',
    // A lost LISTEN connection means live streams, route invalidation and work wake-ups stall until it is back.
    check: () => (db.listenerHealthy() ? OK : { ok: false, value: 'down' }),
  };
  const storage: ReadinessCheck = {
    name: 'storage',
    // A store that answers reads but cannot write (its disk full) fails every sign-in and capture.
    async check() {
      // PGlite's disk-space guard (statfs, no statement): a nearly full disk shows before any write fails.
      if (db.roomToWrite?.() === false) storageFull = true;
      else if (storageFull && (await storageProbe.run())) storageFull = false;
      return storageFull ? { ok: false, value: 'full', retryAfterSeconds: STORAGE_FULL_RETRY_AFTER_SECONDS } : OK;
    },
  };
  return {
    checks: [database, listener, storage],
    // Servers built in turn on one store (tests, peers) leave no listeners behind.
    detach() {
      db.knex.off('query-response', onAnswer);
      db.knex.off('query-error', onError);
    },
  };
}

/**
 * Runs `ask` at most once at a time; callers meanwhile share its answer. An answer later than
 * `timeoutMs` counts as false, and while that late one is still out no new one starts: against a
 * black-holed database each probe would otherwise hold a pooled connection until its timeout.
 */
class SingleFlight {
  private asking: Promise<boolean> | undefined;
  private outstanding = false;

  constructor(
    private readonly ask: () => Promise<boolean>,
    private readonly timeoutMs: number,
  ) {}

  run(): Promise<boolean> {
    if (this.outstanding && !this.asking) return Promise.resolve(false);
    this.asking ??= this.start().finally(() => (this.asking = undefined));
    return this.asking;
  }

  private start(): Promise<boolean> {
    this.outstanding = true;
    const answer = this.ask().catch(() => false);
    void answer.finally(() => (this.outstanding = false));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), this.timeoutMs)));
    return Promise.race([answer, timeout]).finally(() => clearTimeout(timer));
  }
}
