import knexModule from 'knex';

/*
 * The parts of knex, tarn and pg this adapter reaches into beyond their public API: the shapes it
 * reads and the checks it repeats. Re-check them against the upstream source when a version
 * changes (README.md).
 */

/**
 * tarn's pool as Knex keeps it (tarn 3): the resources it holds, free and handed out, and the
 * acquires waiting. Its public counters (`numFree()`, `numUsed()`) are these arrays' lengths.
 */
export interface TarnPool {
  destroyed: boolean;
  max: number;
  acquireTimeoutMillis: number;
  pendingCreates: unknown[];
  free: Array<{ resource: unknown }>;
  used: Array<{ resource: unknown }>;
  pendingAcquires: unknown[];
  pendingValidations: unknown[];
  release(resource: unknown): boolean;
}

/** What Knex's client does for every query: take a pooled connection, run the SQL through the dialect's driver call, give it back. */
export interface KnexDriverClient {
  config: { client?: unknown };
  pool?: TarnPool;
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<void>;
  _query(connection: unknown, query: { sql: string; bindings: unknown[] }): Promise<{ response: { rows: unknown[] } }>;
}

/** pg's Query (a submittable): pg neither copies its config nor wraps it in a promise of its own. */
interface PgQuery {
  name?: string;
}
type PgQueryClass = new (text: string, values: unknown[], callback: (error: Error | undefined, result: { rows: unknown[] }) => void) => PgQuery;

/** pg's Client as Knex pools it: what the queue calls on a connection and the flags it checks. */
export interface PgConnection {
  query(query: PgQuery): void;
  constructor: { Query?: PgQueryClass };
  /** pg: no query running or queued (what the pool's validation checks, src/store/database.ts). */
  readyForQuery?: boolean;
  /** Set by Knex on a connection that failed: its validation refuses it. */
  __knex__disposed?: unknown;
  /** pg: the connection's settings; `query_timeout` is read by `query()` for a timer per query unless the query names its own. */
  connectionParameters?: { query_timeout?: number };
}

/** Knex's own error for a connection not acquired in time (src/errors.ts reads it as the database being unavailable). */
export function acquireTimeout(): Error {
  return new knexModule.KnexTimeoutError('Knex: Timeout acquiring a connection. The pool is probably full. Are you missing a .transacting(trx) call?');
}

/** The checks Knex's pool validation makes of a pg connection: not disposed by Knex, `readyForQuery` (this server's own check, src/store/database.ts). */
export function usable(connection: PgConnection): boolean {
  return !connection.__knex__disposed && connection.readyForQuery === true;
}

/**
 * A free connection of the pool, taken at once, as tarn's acquire would hand it out — or undefined,
 * and the read waits for one. Only the plain case is taken here: nobody waiting (they come first), the connection passing the
 * checks Knex's validation makes of a pg connection (not disposed; `readyForQuery`, this server's
 * own check). A connection that fails them is left to Knex's acquire, whose validation destroys it.
 * The connection moves from `free` to `used` as tarn's `_doAcquire` moves it, so `release`, the
 * reaper and the counters see a connection acquired the usual way.
 */
export function claimIdle(pool: TarnPool): PgConnection | undefined {
  if (pool.destroyed || pool.pendingAcquires.length > 0 || pool.pendingValidations.length > 0) return undefined;
  const free = pool.free[pool.free.length - 1];
  if (!free) return undefined;
  const connection = free.resource as PgConnection;
  if (!usable(connection)) return undefined;
  pool.free.pop();
  pool.used.push(free);
  return connection;
}
