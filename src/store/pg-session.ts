import pg from 'pg';

/**
 * What needs a PostgreSQL session of its own, and so a direct connection rather than one of
 * PgBouncer's in transaction mode (docs/operations.md, PgBouncer): the session advisory lock that
 * serialises migrations, and statement deadlines that cannot be a session setting there.
 */

/** A session advisory lock: its two int4 keys, the setting that bounds the wait, what it protects (for the error). */
export interface AdvisoryLock {
  keys: readonly [number, number];
  setting: string;
  what: string;
}

/** Another process held the lock for longer than the wait allowed. */
export class AdvisoryLockTimeoutError extends Error {
  override name = 'AdvisoryLockTimeoutError';
}

/**
 * Runs `work` while holding `lock` on a connection opened for it alone, waiting for another holder at
 * most `timeoutMs` (PostgreSQL's lock_timeout applies to advisory locks); the lock goes with the
 * session, so a process that dies mid-run releases it. `work` uses its own connections: the lock's
 * only job is to make every other process wait until the run is over.
 */
export async function withAdvisoryLock<T>(
  connection: Pick<pg.ClientConfig, 'connectionString' | 'connectionTimeoutMillis'>,
  lock: AdvisoryLock,
  timeoutMs: number,
  work: () => Promise<T>,
): Promise<T> {
  const session = new pg.Client({ ...connection, lock_timeout: timeoutMs, keepAlive: true });
  // A session lost while `work` runs must not crash the process; the run itself goes on (knex's own
  // lock table still refuses a concurrent batch), and the end below reports nothing more.
  session.on('error', () => undefined);
  await session.connect();
  try {
    try {
      await session.query('SELECT pg_advisory_lock($1, $2)', [...lock.keys]);
    } catch (error) {
      if ((error as { code?: string }).code === '55P03') {
        throw new AdvisoryLockTimeoutError(
          `another process has been running ${lock.what} for longer than ${lock.setting}=${timeoutMs} ms (PostgreSQL advisory lock ${lock.keys.join(', ')}); ` +
            `wait for it to finish, or raise ${lock.setting}`,
          { cause: error },
        );
      }
      throw error;
    }
    return await work();
  } finally {
    // Ending the session releases the lock (no unlock round trip needed, and none can be forgotten).
    await session.end().catch(() => undefined);
  }
}

/** pg's Query as this module uses it: its completion callback, and the events of one without a callback. */
interface PgQueryLike {
  submit?: unknown;
  callback?: (error: unknown, result?: unknown) => void;
  once?(event: 'end' | 'error', listener: () => void): unknown;
}

/** What pg's Client keeps about the backend it talks to, for a CancelRequest. */
interface CancelKeys {
  processID: number | null;
  secretKey: number | null;
  host: string;
  port: number;
}

/**
 * A pg Client whose every statement is cancelled at `deadlineMs`, for connections through PgBouncer
 * in transaction mode, where statement_timeout can be neither a startup parameter (PgBouncer refuses
 * it: brianc/node-postgres#2103) nor a session SET (the next transaction may run on another server
 * connection, and this one's SET would apply to another client's). A timer per statement sends
 * PostgreSQL's CancelRequest, which PgBouncer forwards to the server connection running it; the
 * statement fails with 57014 (query_canceled), as a statement_timeout would, and the request answers
 * 503 like any other timeout. The alternative, `BEGIN; SET LOCAL statement_timeout` around every
 * statement, costs two more round trips per statement (docs/operations.md, PgBouncer, measured).
 */
export function statementDeadlineClient(pgModule: typeof pg, deadlineMs: number): typeof pg.Client {
  return class StatementDeadlineClient extends pgModule.Client {
    override query(...args: unknown[]): never {
      const [config, values, callback] = args as [PgQueryLike, unknown, unknown];
      const timer = setTimeout(() => sendCancel(pgModule, this as unknown as CancelKeys), deadlineMs);
      const clear = () => clearTimeout(timer);
      if (typeof config?.submit === 'function') {
        // A Query object (pooledRead): its own callback, or its events.
        const own = config.callback;
        if (own) config.callback = (error, result) => (clear(), own(error, result));
        else {
          config.once?.('end', clear);
          config.once?.('error', clear);
        }
      } else if (typeof values === 'function') {
        args[1] = (error: unknown, result: unknown) => (clear(), (values as (e: unknown, r: unknown) => void)(error, result));
      } else if (typeof callback === 'function') {
        args[2] = (error: unknown, result: unknown) => (clear(), (callback as (e: unknown, r: unknown) => void)(error, result));
      }
      let result: unknown;
      try {
        result = (super.query as (...a: unknown[]) => unknown)(...args);
      } catch (error) {
        clear();
        throw error;
      }
      if (result instanceof Promise) result.then(clear, clear);
      return result as never;
    }
  };
}

/** PostgreSQL's CancelRequest for whatever `client`'s backend runs, on a connection of its own (as pg's own cancel does). */
function sendCancel(pgModule: typeof pg, client: CancelKeys): void {
  if (client.processID === null || client.secretKey === null) return;
  const connection = new pgModule.Connection() as pg.Connection & {
    connect(port: number, host: string): void;
    cancel(processId: number, secretKey: number): void;
  };
  connection.on('error', () => undefined);
  connection.once('connect', () => connection.cancel(client.processID as number, client.secretKey as number));
  connection.connect(client.port, client.host);
}
