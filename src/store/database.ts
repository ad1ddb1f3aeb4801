import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import type pg from 'pg';
import { DataDirError, lockDataDir, preparePrivateDataDir, type DataDirLock } from './data-dir-lock.js';
import { migrationSource } from './migrations/index.js';
import { readSchemaState } from './schema-state.js';
import { unnamedPooledReads } from './pool-fast-path/pooled-read.js';
import type { Config } from '../config.js';
import { defaultOf } from '../settings/table.js';
import { isStorageFull } from '../errors.js';

/** Which engine is behind the Knex instance; the SQL is the same, only a few driver quirks differ. */
export type DatabaseKind = 'postgres' | 'pglite';

export interface Database {
  knex: Knex;
  kind: DatabaseKind;
  /**
   * Subscribes to a NOTIFY channel (LISTEN on PostgreSQL, PGlite's in-process listener otherwise).
   * On PostgreSQL a lost LISTEN connection is re-established by itself; `onReconnect` then runs,
   * because notifications sent meanwhile were lost and the consumer must re-read what it missed.
   */
  listen(channel: string, onPayload: (payload: string) => void, options?: { onReconnect?(): void }): Promise<() => Promise<void>>;
  /** False while the LISTEN connection is down (notifications are being missed); `/readyz` reports it. */
  listenerHealthy(): boolean;
  /**
   * Whether the store can write: `full` when a small write fails for lack of space (on PGlite, also
   * when the disk-space guard refuses it, see disk-space.ts). `/readyz` reports it.
   */
  storage(): Promise<'ok' | 'full'>;
  /**
   * PGlite only, from `statfs` (no statement): false while DATA_DIR's filesystem has too little room
   * for a write, or while the store is being reopened after a PANIC. `/readyz` turns `storage: full` at once.
   */
  roomToWrite?(): boolean;
  /**
   * PGlite only: runs one statement without parameters outside Knex (no query events, no request
   * log, no statement counters see it), in turn with every other statement. For the store's own
   * upkeep (PgliteAnalyzer), never for data a request reads.
   */
  maintenance?(sql: string): Promise<Array<Record<string, unknown>>>;
  /**
   * Runs `work` while this process alone may migrate: on PostgreSQL under a session advisory lock
   * held on a dedicated direct connection (DATABASE_LISTEN_URL) for the whole run, waiting for
   * another process's run at most MIGRATION_LOCK_TIMEOUT_MS; on PGlite at once (DATA_DIR's lock
   * already makes the process the only one).
   */
  withMigrationLock<T>(work: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * One small write, as a request would make: a probe row in `limit_counters` (expired at once, so the
 * counters' sweep removes it). Only a storage failure says anything here; `/readyz` checks
 * reachability itself.
 */
async function probeWrite(knex: Knex): Promise<'ok' | 'full'> {
  try {
    await knex.raw(
      `INSERT INTO limit_counters (key, count, expires_at) VALUES ('readiness-probe', 0, now())
       ON CONFLICT (key) DO UPDATE SET count = 0, expires_at = now()`,
    );
    return 'ok';
  } catch (error) {
    return isStorageFull(error) ? 'full' : 'ok';
  }
}

export interface DatabaseOptions {
  databaseUrl?: string | undefined;
  /** PGlite data directory; `memory://` keeps the database in memory. */
  dataDir?: string;
  /** A data directory archive (a template, a `dumpDataDir`), loaded instead of running initdb (tests use a migrated template). */
  loadDataDir?: Blob;
  poolMax?: number;
  /** PostgreSQL only: how long to wait for a new connection (DB_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
  /** PostgreSQL only: how long a query waits for a pooled connection (DB_ACQUIRE_TIMEOUT_MS). */
  acquireTimeoutMs?: number;
  /** PostgreSQL only: the server's statement_timeout; a query with no answer 1 s later is abandoned (DB_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs?: number;
  /** PostgreSQL only: the direct connection for LISTEN and the migration lock (DATABASE_LISTEN_URL); `databaseUrl` when unset. */
  listenUrl?: string | undefined;
  /** PostgreSQL only: `transaction` when `databaseUrl` goes through PgBouncer in transaction mode (DATABASE_POOL_MODE). */
  poolMode?: 'session' | 'transaction';
  /** PostgreSQL only: how long to wait for another process's migrations (MIGRATION_LOCK_TIMEOUT_MS). */
  migrationLockTimeoutMs?: number;
  /** PostgreSQL only: how often the idle LISTEN connection is checked, and the longest reconnect delay. */
  listenerHeartbeatMs?: number;
  listenerMaxBackoffMs?: number;
  /** PGlite only: PostgreSQL's shared_buffers in MB (PGLITE_SHARED_BUFFERS_MB; see pglite/init.ts). */
  pgliteSharedBuffersMb?: number;
  /**
   * PGlite only: where a new database (a DATA_DIR holding none, or `memory://`) comes from when
   * `loadDataDir` is not given: the migrated template archive at the path this answers
   * (shippedPgliteTemplate; copied into DATA_DIR in well under a second), else initdb (seconds, more
   * on a busy machine).
   */
  newDatabaseTemplate?: () => Promise<string | undefined>;
  /** PGlite only: told before a new database is made, and how, so a slow first start can say why it is slow. */
  onNewDatabase?: (how: NewDatabaseSource) => void;
}

/** How a new embedded database is made: loaded from a migrated template, or created by initdb. */
export type NewDatabaseSource = 'template' | 'initdb';

/** The PostgreSQL timeouts of a store opened without them (tests, scripts): the settings' defaults, and the listener's own. */
const DATABASE_TIMEOUT_DEFAULTS = {
  connectTimeoutMs: defaultOf('dbConnectTimeoutMs'),
  acquireTimeoutMs: defaultOf('dbAcquireTimeoutMs'),
  statementTimeoutMs: defaultOf('dbStatementTimeoutMs'),
  listenerHeartbeatMs: 5000,
  listenerMaxBackoffMs: 5000,
  migrationLockTimeoutMs: defaultOf('migrationLockTimeoutMs'),
};

/** The store options of a server process, from its configuration. */
export function databaseOptionsOf(
  config: Pick<
    Config,
    | 'databaseUrl'
    | 'databaseListenUrl'
    | 'databasePoolMode'
    | 'migrationLockTimeoutMs'
    | 'dataDir'
    | 'dbConnectTimeoutMs'
    | 'dbAcquireTimeoutMs'
    | 'dbStatementTimeoutMs'
    | 'pgliteSharedBuffersMb'
  >,
): DatabaseOptions {
  return {
    databaseUrl: config.databaseUrl,
    listenUrl: config.databaseListenUrl,
    poolMode: config.databasePoolMode,
    migrationLockTimeoutMs: config.migrationLockTimeoutMs,
    dataDir: config.dataDir,
    pgliteSharedBuffersMb: config.pgliteSharedBuffersMb,
    connectTimeoutMs: config.dbConnectTimeoutMs,
    acquireTimeoutMs: config.dbAcquireTimeoutMs,
    statementTimeoutMs: config.dbStatementTimeoutMs,
  };
}

/** Opens the store: PostgreSQL through `pg` when a URL is given, embedded PGlite otherwise. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options);
  return openPglite(options);
}

async function openPostgres(connectionString: string, options: DatabaseOptions): Promise<Database> {
  // Each driver is loaded only by the store that uses it (PGlite's start never loads pg).
  const { default: pg } = await import('pg');
  const { PgListener } = await import('./pg-listener.js');
  const { withAdvisoryLock, statementDeadlineClient } = await import('./pg-session.js');
  // int8 (count(*), bigint ids) as a number on pg, as PGlite already does, so both drivers agree.
  pg.types.setTypeParser(20, (value: string) => Number(value));
  const timeouts = { ...DATABASE_TIMEOUT_DEFAULTS, ...definedOnly(options) };
  const throughPgBouncer = options.poolMode === 'transaction';
  const connection = {
    connectionString,
    connectionTimeoutMillis: timeouts.connectTimeoutMs,
    // PgBouncer refuses statement_timeout as a startup parameter (and, in transaction mode, a session
    // SET would leak to other clients): there each statement is cancelled at the deadline instead
    // (statementDeadlineClient, below).
    ...(throughPgBouncer ? {} : { statement_timeout: timeouts.statementTimeoutMs }),
    // The server ends a slow statement at statement_timeout; no answer at all a second later means
    // the network or the server is gone (a black hole), and the client gives up on its own.
    query_timeout: timeouts.statementTimeoutMs + 1000,
    keepAlive: true,
  };
  // LISTEN and the migration lock need a session of their own: a direct connection, not PgBouncer's.
  const direct = { ...connection, connectionString: options.listenUrl ?? connectionString, statement_timeout: timeouts.statementTimeoutMs };
  const knex = knexFactory({
    client: 'pg',
    connection,
    acquireConnectionTimeout: timeouts.acquireTimeoutMs,
    // knex prints pool warnings with console.log; the failures reach the request log as 503s instead.
    log: { warn: () => undefined },
    pool: {
      min: 0,
      max: options.poolMax ?? 10,
      // A connection whose query timed out without an answer still waits for that answer and
      // would stall every later query: it is not handed out again (the pool destroys it).
      validate: (client: pg.Client & { readyForQuery?: boolean }) => client.readyForQuery === true,
    },
  });
  if (throughPgBouncer) {
    // Knex makes every pooled connection with `driver.Client`: this one cancels a statement at the deadline.
    const driverClient = knex.client as { driver: typeof pg };
    driverClient.driver = Object.assign(Object.create(driverClient.driver) as typeof pg, {
      Client: statementDeadlineClient(pg, timeouts.statementTimeoutMs),
    });
    unnamedPooledReads(knex);
  }
  const listener = new PgListener({
    client: { ...direct, query_timeout: Math.min(connection.query_timeout, timeouts.listenerHeartbeatMs) },
    heartbeatMs: timeouts.listenerHeartbeatMs,
    backoff: { minMs: Math.min(100, timeouts.listenerMaxBackoffMs), maxMs: timeouts.listenerMaxBackoffMs },
  });
  return {
    knex,
    kind: 'postgres',
    listen: (channel, onPayload, listenOptions) => listener.listen(channel, { onPayload, onReconnect: listenOptions?.onReconnect }),
    listenerHealthy: () => listener.healthy(),
    storage: () => probeWrite(knex),
    withMigrationLock: (work) =>
      withAdvisoryLock(
        { connectionString: direct.connectionString, connectionTimeoutMillis: direct.connectionTimeoutMillis },
        MIGRATION_LOCK,
        timeouts.migrationLockTimeoutMs,
        work,
      ),
    async close() {
      await listener.close();
      await knex.destroy();
    },
  };
}

/** The session advisory lock that serialises migrations (an arbitrary, fixed pair of keys: "cfs", "migrations"). */
const MIGRATION_LOCK = { keys: [0x63_66_73, 1] as const, setting: 'MIGRATION_LOCK_TIMEOUT_MS', what: 'the migrations' };

function definedOnly(options: DatabaseOptions): Partial<typeof DATABASE_TIMEOUT_DEFAULTS> {
  const { connectTimeoutMs, acquireTimeoutMs, statementTimeoutMs, listenerHeartbeatMs, listenerMaxBackoffMs, migrationLockTimeoutMs } = options;
  return Object.fromEntries(
    Object.entries({ connectTimeoutMs, acquireTimeoutMs, statementTimeoutMs, listenerHeartbeatMs, listenerMaxBackoffMs, migrationLockTimeoutMs }).filter(
      ([, value]) => value !== undefined,
    ),
  );
}

async function openPglite(options: DatabaseOptions): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { default: ClientPgLite } = await import('knex-pglite');
  const dataDir = options.dataDir ?? defaultOf('dataDir');
  const onDisk = !dataDir.startsWith('memory://');
  // Private and exclusive before PGlite touches a file: see data-dir-lock.ts.
  let lock: DataDirLock | undefined;
  if (onDisk) {
    preparePrivateDataDir(dataDir);
    lock = lockDataDir(dataDir);
  }
  const { initPgliteDataDir, pgliteStartParams, plainPgliteArchive, preferBaselineWasm, unpackPgliteDataDir } = await import('./pglite/init.js');
  preferBaselineWasm();
  const startParams = pgliteStartParams(options.pgliteSharedBuffersMb ?? defaultOf('pgliteSharedBuffersMb'));
  const pglite = await (async () => {
    // A new database comes from an archive (loadDataDir, or the template's file) instead of initdb.
    let loadDataDir: Blob | string | undefined = options.loadDataDir;
    const isNew = !onDisk || !existsSync(join(dataDir, 'PG_VERSION'));
    if (!loadDataDir && isNew && options.newDatabaseTemplate) {
      loadDataDir = await options.newDatabaseTemplate();
      options.onNewDatabase?.(loadDataDir ? 'template' : 'initdb');
    }
    // On disk, unpacked by us and opened like a restart (cheaper than PGlite's loadDataDir).
    if (onDisk && loadDataDir && isNew && (await unpackPgliteDataDir(dataDir, loadDataDir))) loadDataDir = undefined;
    // PGlite's own loader (an in-memory database) reads plain archives only: zero-trimmed files are expanded.
    const archive =
      loadDataDir === undefined
        ? undefined
        : ((await plainPgliteArchive(loadDataDir)) ?? (typeof loadDataDir === 'string' ? new Blob([readFileSync(loadDataDir)]) : loadDataDir));
    if (onDisk && !archive) await initPgliteDataDir(dataDir, startParams);
    return PGlite.create({ dataDir: onDisk ? dataDir : undefined, loadDataDir: archive, startParams });
  })().catch((error: unknown) => {
    lock?.release();
    const message = error instanceof Error ? error.message : String(error);
    throw new DataDirError(`DATA_DIR ${dataDir} cannot be opened as a PGlite database: ${message}`, { cause: error });
  });
  const { PgliteStatements } = await import('./pglite/statements.js');
  const { DiskSpaceGuard } = await import('./disk-space.js');
  // Writes are refused (53100, so 503) before the disk is too full for the next WAL segment.
  const guard = onDisk ? new DiskSpaceGuard(dataDir) : undefined;
  let current = pglite;
  let closing = false;
  const subscriptions = new Set<{ channel: string; onPayload(payload: string): void; onReconnect?(): void; unlisten(): Promise<void> }>();
  // After a PANIC the instance is abandoned (PgliteStatements): a fresh one on the same directory
  // (crash recovery) takes over once the disk has room, in this same process.
  const reopen = (): void => {
    const timer = setTimeout(() => {
      if (closing) return;
      if (guard && !guard.hasRoom()) return reopen();
      PGlite.create({ dataDir, startParams })
        .then(async (fresh) => {
          if (closing) return fresh.close();
          statements.replace(fresh);
          current = fresh;
          for (const subscription of subscriptions) {
            subscription.unlisten = await fresh.listen(subscription.channel, subscription.onPayload);
            subscription.onReconnect?.();
          }
        })
        .catch(reopen);
    }, PGLITE_REOPEN_DELAY_MS);
    timer.unref();
  };
  const statements = new PgliteStatements(pglite, { guard, onPanic: onDisk ? reopen : undefined });
  // knex-pglite runs each statement through PGlite.query; this client runs it through PgliteStatements.
  class FastPgliteClient extends ClientPgLite {
    async _query(_connection: unknown, obj: { sql?: string; bindings?: unknown[]; response?: unknown }): Promise<unknown> {
      if (!obj.sql) throw new Error('The query is empty');
      obj.response = await statements.run(obj.sql, obj.bindings ?? []);
      return obj;
    }
    // close() below closes whichever instance is current (an abandoned one never).
    override async destroyRawConnection(): Promise<void> {}
  }
  const knex = knexFactory({ client: FastPgliteClient, connection: () => ({ pglite }) } as Knex.Config);
  return {
    knex,
    kind: 'pglite',
    async listen(channel, onPayload, listenOptions) {
      const subscription = { channel, onPayload, onReconnect: listenOptions?.onReconnect, unlisten: async () => {} };
      // While the instance is abandoned the subscription waits for the fresh one.
      if (!statements.failed) subscription.unlisten = await current.listen(channel, onPayload);
      subscriptions.add(subscription);
      return async () => {
        subscriptions.delete(subscription);
        if (!statements.failed) await subscription.unlisten();
      };
    },
    // In-process notifications: nothing to lose, unless the instance PANICked.
    listenerHealthy: () => !statements.failed,
    maintenance: async (sql) => (await statements.run(sql, [])).rows as Array<Record<string, unknown>>,
    // One process owns DATA_DIR (its lock file), so nobody else can be migrating.
    withMigrationLock: (work) => work(),
    roomToWrite: () => !statements.failed && (guard?.hasRoom() ?? true),
    storage: async () => (statements.failed ? 'full' : probeWrite(knex)),
    async close() {
      closing = true;
      try {
        await knex.destroy();
        if (!statements.failed && !current.closed) await current.close();
      } finally {
        lock?.release();
      }
    },
  };
}

/** How long after a PANIC (and then between tries) the embedded database is reopened. */
const PGLITE_REOPEN_DELAY_MS = 1000;

/** What a migration run did, and what the database holds that this code does not know. */
export interface MigrationOutcome {
  applied: string[];
  /**
   * Migrations recorded in the database but not in this code: a newer release migrated it (a rolling
   * update). Additive migrations keep this code working (docs/operations.md, Migrations).
   */
  unknown: string[];
}

/**
 * Runs every pending migration (the same list on PostgreSQL and PGlite). Migrations the database has
 * and this code does not (a newer replica ran them) are reported, not refused: knex's own check
 * ("migration directory is corrupt") would stop an older replica from restarting mid-rollout.
 */
export async function migrateLatest(knex: Knex): Promise<MigrationOutcome> {
  const [, applied] = (await knex.migrate.latest({ migrationSource, disableMigrationsListValidation: true })) as [number, string[]];
  const { unknown } = await readSchemaState(knex);
  return { applied, unknown };
}

/**
 * Migrates the store once however many processes start at the same time: every one waits for the
 * migration lock (Database.withMigrationLock), and the first to hold it runs what is pending — knex's
 * own tables (knex_migrations, knex_migrations_lock) are created inside the lock too, so they cannot
 * race (knex/knex#3538) — while the others then find nothing left to do.
 */
export function migrate(db: Database): Promise<MigrationOutcome> {
  return db.withMigrationLock(() => migrateLatest(db.knex));
}

/** Reverts every migration; used by the migration tests. */
export async function migrateRollbackAll(knex: Knex): Promise<void> {
  await knex.migrate.rollback({ migrationSource }, true);
}
