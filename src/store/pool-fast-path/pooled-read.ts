import knexModule, { type Knex } from 'knex';
import { acquireTimeout, claimIdle, usable, type KnexDriverClient, type PgConnection, type TarnPool } from './tarn-internals.js';

/** A read for `pooledRead`: SQL with the driver's `$1` placeholders, and a statement name to prepare it once per connection (pg). */
export interface PooledStatement {
  text: string;
  name?: string;
}

/**
 * One statement outside a transaction, straight on a connection of Knex's own pool: the same pool
 * (size, acquire timeout, validation), connection settings (statement_timeout, query_timeout) and
 * driver as any Knex query, without the query builder and runner around them (events, binding
 * rewrites, compile, response post-processing, runner promises) — the hottest reads of the APIs
 * (docs/architecture.md, REST and gRPC step tables). On pg the statement is pg's own `Query` object,
 * named when the statement has a name (parsed and planned once per connection); pg would otherwise
 * copy a config object by property descriptors and wrap it in a promise with a stack-capturing catch.
 * Elsewhere (PGlite) it is the dialect's own call, which prepares statements itself. The connection
 * goes back as soon as the driver answers, on a synchronous throw too.
 */
export function pooledRead<Row>(knex: Knex, statement: PooledStatement, values: unknown[]): Promise<Row[]> {
  const client = knex.client as KnexDriverClient;
  if (client.config.client === 'pg' && client.pool) {
    const reads = hotReadsOf(client, client.pool);
    return new Promise((resolve, reject) => reads.enqueue({ statement, values, resolve, reject, since: 0, deadline: 0, done: undefined }));
  }
  return client.acquireConnection().then(
    (connection) =>
      new Promise<Row[]>((resolve, reject) => {
        const done = (error: unknown, rows?: unknown[]) => {
          // Knex's release is synchronous (its promise is already resolved): awaiting it only costs a tick.
          void client.releaseConnection(connection);
          if (error) reject(error);
          else resolve(rows as Row[]);
        };
        try {
          client._query(connection, { sql: statement.text, bindings: values }).then(
            ({ response }) => done(undefined, response.rows),
            (error: unknown) => done(error),
          );
        } catch (error) {
          done(error);
        }
      }),
  );
}

/** One pooled read waiting for, or running on, a connection. */
interface HotRead {
  statement: PooledStatement;
  values: unknown[];
  resolve(rows: never[]): void;
  reject(error: unknown): void;
  /** When it began to wait (ms, performance.now()), for the acquire timeout. */
  since: number;
  /** While it runs: when it is abandoned without an answer (ms, performance.now(); Infinity without a query timeout). */
  deadline: number;
  /** While it runs: settles it (the sweeper fails it with pg's own read timeout error at the deadline). */
  done: ((error: unknown, rows?: unknown[]) => void) | undefined;
}

const hotReads = new WeakMap<TarnPool, HotReads>();

/** Knex clients whose pooled reads must not be named (prepared): see `unnamedPooledReads`. */
const unnamed = new WeakSet<object>();

/**
 * Pooled reads on `knex` run as unnamed statements (parsed and planned each time): for a pool through
 * PgBouncer in transaction mode, where a statement prepared on one server connection is unknown on the
 * next (Debian's PgBouncer 1.18 has no `max_prepared_statements`; docs/operations.md, PgBouncer).
 */
export function unnamedPooledReads(knex: Knex): void {
  unnamed.add(knex.client as object);
}

function hotReadsOf(client: KnexDriverClient, pool: TarnPool): HotReads {
  let reads = hotReads.get(pool);
  if (!reads) hotReads.set(pool, (reads = new HotReads(client, pool, !unnamed.has(client))));
  return reads;
}

/**
 * The pooled reads of one Knex pg pool, queued first-come first-served when every connection is in
 * use, and handed a connection straight from the read that finishes on it — what pg's own Pool does
 * for `pool.query`. tarn resolves every acquire, an idle connection's too, through two pending
 * operations (the acquire and its validation), each with a timeout timer and a chain of promises,
 * and Knex's validation awaits three more: under load, when every read waits for a connection, that
 * was ~5 µs of a ~70 µs read (docs/architecture.md, REST step table).
 *
 * The pool stays the one Knex owns: its size, its connections, its validation. Connections come
 * from it through Knex's own acquire (as many at once as the pool can grow by, so it grows as it
 * would) or, when one sits idle, taken as tarn's acquire takes it; they go back with tarn's `release`
 * unless another read is waiting and no other query waits in tarn's queue (those come first, so a
 * transaction is never starved by a stream of reads). A read waits at most the pool's acquire
 * timeout, then fails with Knex's own timeout error, as a Knex query would.
 */
class HotReads {
  private readonly waiting: HotRead[] = [];
  /**
   * The read running on each connection, watched for the query timeout: a slot per connection
   * updated in place (a Set of reads, added and deleted per read, was itself promoted ~600 bytes per
   * read), found by the sweeper through the pool's connections in use.
   */
  private readonly runningOn = new WeakMap<PgConnection, HotRead | undefined>();
  /** The connections' query timeout (pg's `query_timeout`, ms; 0: none), as the last read found it. */
  private queryTimeoutMs = 0;
  /** Knex acquires in flight on the queue's behalf. */
  private acquiring = 0;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: KnexDriverClient,
    private readonly pool: TarnPool,
    /** Whether a statement's name is used (prepared once per connection); not through PgBouncer in transaction mode. */
    private readonly named: boolean,
  ) {}

  enqueue(read: HotRead): void {
    if (this.waiting.length === 0) {
      const idle = claimIdle(this.pool);
      if (idle) {
        this.run(idle, read);
        return;
      }
    }
    read.since = performance.now();
    this.waiting.push(read);
    this.acquire();
    this.sweep();
  }

  /**
   * pg's `query_timeout` (statement_timeout + 1 s: no answer at all means the link is gone) is kept
   * here by the sweeper, not by pg's timer per query: that timer's closure keeps the read's query,
   * result and rows reachable past a young-generation collection, and under load ~1.3 KB per read was
   * promoted to the old generation (~64 MB per 50,000 reads, scavenges 3× slower; docs/performance.md).
   * At the deadline the read fails with pg's own error and the connection goes back to the pool as pg
   * leaves it (its query still active, so the pool's validation destroys it); a late answer is ignored.
   */
  private run(connection: PgConnection, read: HotRead): void {
    // Settles once: the answer, an error, or the sweeper's deadline, whichever comes first.
    const done = (error: unknown, rows?: unknown[]) => {
      if (read.done === undefined) return;
      read.done = undefined;
      this.runningOn.set(connection, undefined);
      this.handBack(connection, error === undefined);
      if (error) read.reject(error);
      else read.resolve(rows as never[]);
    };
    const parameters = connection.connectionParameters;
    const configured = parameters?.query_timeout;
    const timeoutMs = configured || 0;
    if (timeoutMs !== this.queryTimeoutMs) {
      // The sweeper's period follows the timeout it keeps: restarted with it.
      this.queryTimeoutMs = timeoutMs;
      if (this.sweeper) {
        this.stopSweeping();
        this.sweep();
      }
    }
    read.deadline = timeoutMs > 0 ? performance.now() + timeoutMs : Infinity;
    read.done = done;
    this.runningOn.set(connection, read);
    if (timeoutMs > 0) this.sweep();
    try {
      const Query = connection.constructor.Query;
      if (!Query) throw new Error('pg connection without a Query class');
      const query = new Query(read.statement.text, read.values, (error, result) => done(error ?? undefined, result?.rows));
      if (read.statement.name && this.named) query.name = read.statement.name;
      // pg reads the timeout while queueing the query: none there, the sweeper keeps it.
      if (parameters) parameters.query_timeout = 0;
      try {
        connection.query(query);
      } finally {
        if (parameters) parameters.query_timeout = configured;
      }
    } catch (error) {
      done(error);
    }
  }

  /** A read finished on `connection`: the next waiting read takes it over, or the pool gets it back. */
  private handBack(connection: PgConnection, succeeded: boolean): void {
    const next = this.waiting[0];
    // tarn's queue holds this queue's own acquires and anyone else's: others first.
    if (next && succeeded && usable(connection) && this.pool.pendingAcquires.length <= this.acquiring && !this.pool.destroyed) {
      this.waiting.shift();
      this.run(connection, next);
      return;
    }
    this.pool.release(connection);
  }

  /**
   * Knex acquires on the queue's behalf: as many as the pool can still grow by (new connections are
   * made), and one more to receive what other queries give back to tarn. Reads mostly pass
   * connections on to each other; an acquire only catches what tarn hands out.
   */
  private acquire(): void {
    const growth = this.pool.max - this.pool.used.length - this.pool.pendingCreates.length;
    if (this.acquiring >= Math.min(this.waiting.length, 1 + Math.max(0, growth))) return;
    this.acquiring++;
    this.client.acquireConnection().then(
      (connection) => {
        this.acquiring--;
        const next = this.waiting.shift();
        if (next) this.run(connection as PgConnection, next);
        else this.pool.release(connection);
        this.settled();
      },
      (error: unknown) => {
        this.acquiring--;
        // A connection that could not be made: the oldest read gets the error, as tarn would give it.
        // A timeout is not a read's: reads were served by hand-over meanwhile, and each read's own
        // wait is bounded by `expire`.
        if (!(error instanceof knexModule.KnexTimeoutError)) this.waiting.shift()?.reject(error);
        this.settled();
      },
    );
  }

  private settled(): void {
    if (this.waiting.length > 0) this.acquire();
  }

  /**
   * Starts the sweeper if it is not running: a quarter of the shorter timeout (acquire, query) apart,
   * it stops by itself on a tick with nothing to watch (so a busy pool keeps one interval).
   */
  private sweep(): void {
    if (this.sweeper) return;
    const periodMs = Math.min(this.pool.acquireTimeoutMillis, this.queryTimeoutMs || Infinity) / 4;
    this.sweeper = setInterval(() => this.expire(), Math.max(10, periodMs)).unref();
  }

  /**
   * Reads waiting longer than the acquire timeout fail as a Knex query's acquire would; reads running
   * past their deadline fail as pg's query timeout fails them.
   */
  private expire(): void {
    const now = performance.now();
    const timeoutMs = this.pool.acquireTimeoutMillis;
    while (this.waiting.length > 0 && (this.pool.destroyed || now - (this.waiting[0]?.since ?? now) >= timeoutMs)) {
      this.waiting.shift()?.reject(acquireTimeout());
    }
    // The pool's connections in use (at most its size); a copy, as an abandoned read gives its connection back.
    let running = false;
    for (const { resource } of [...this.pool.used]) {
      const read = this.runningOn.get(resource as PgConnection);
      if (read && now >= read.deadline) read.done?.(new Error('Query read timeout'));
      else if (read) running = true;
    }
    if (this.waiting.length === 0 && !running) this.stopSweeping();
  }

  private stopSweeping(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}
