import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { DataDirError, lockDataDir, preparePrivateDataDir, type DataDirLock } from './data-dir-lock.js';
import { migrationSource } from './migrations/index.js';

export type { Knex };

/** Which engine is behind the Knex instance; the SQL is the same, only a few driver quirks differ. */
export type DatabaseKind = 'postgres' | 'pglite';

export interface Database {
  knex: Knex;
  kind: DatabaseKind;
  /** Subscribes to a NOTIFY channel (LISTEN on PostgreSQL, PGlite's in-process listener otherwise). */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl?: string | undefined;
  /** PGlite data directory; `memory://` keeps the database in memory. */
  dataDir?: string;
  /** A gzip tarball from `dumpDataDir`, loaded instead of running initdb (tests use a migrated template). */
  loadDataDir?: Blob;
  poolMax?: number;
}

// int8 (count(*), bigint ids) as a number on pg, as PGlite already does, so both drivers agree.
pg.types.setTypeParser(20, (value: string) => Number(value));

/** Opens the store: PostgreSQL through `pg` when a URL is given, embedded PGlite otherwise. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options.poolMax ?? 10);
  return openPglite(options);
}

async function openPostgres(connectionString: string, poolMax: number): Promise<Database> {
  const knex = knexFactory({ client: 'pg', connection: { connectionString }, pool: { min: 0, max: poolMax } });
  const listeners: pg.Client[] = [];
  return {
    knex,
    kind: 'postgres',
    async listen(channel, onPayload) {
      const client = new pg.Client({ connectionString });
      await client.connect();
      client.on('notification', (message) => {
        if (message.channel === channel) onPayload(message.payload ?? '');
      });
      client.on('error', () => undefined);
      await client.query(`LISTEN ${quoteIdentifier(channel)}`);
      listeners.push(client);
      return async () => {
        listeners.splice(listeners.indexOf(client), 1);
        await client.end().catch(() => undefined);
      };
    },
    async close() {
      await Promise.all(listeners.splice(0).map((client) => client.end().catch(() => undefined)));
      await knex.destroy();
    },
  };
}

async function openPglite(options: DatabaseOptions): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { default: ClientPgLite } = await import('knex-pglite');
  const dataDir = options.dataDir ?? './data';
  const onDisk = !dataDir.startsWith('memory://');
  // Private and exclusive before PGlite touches a file: see data-dir-lock.ts.
  let lock: DataDirLock | undefined;
  if (onDisk) {
    preparePrivateDataDir(dataDir);
    lock = lockDataDir(dataDir);
  }
  const pglite = await PGlite.create({ dataDir: onDisk ? dataDir : undefined, loadDataDir: options.loadDataDir }).catch((error: unknown) => {
    lock?.release();
    const message = error instanceof Error ? error.message : String(error);
    throw new DataDirError(`DATA_DIR ${dataDir} cannot be opened as a PGlite database: ${message}`, { cause: error });
  });
  const knex = knexFactory({ client: ClientPgLite, connection: () => ({ pglite }) } as Knex.Config);
  return {
    knex,
    kind: 'pglite',
    async listen(channel, onPayload) {
      return pglite.listen(channel, onPayload);
    },
    async close() {
      try {
        await knex.destroy();
        if (!pglite.closed) await pglite.close();
      } finally {
        lock?.release();
      }
    },
  };
}

/** Runs every pending migration (the same list on PostgreSQL and PGlite). */
export async function migrateLatest(knex: Knex): Promise<void> {
  await knex.migrate.latest({ migrationSource });
}

/** Reverts every migration; used by the migration tests. */
export async function migrateRollbackAll(knex: Knex): Promise<void> {
  await knex.migrate.rollback({ migrationSource }, true);
}

function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
