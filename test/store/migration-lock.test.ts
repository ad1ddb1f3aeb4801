import { jest } from '@jest/globals';
import pg from 'pg';
import { migrate, openDatabase, type Database } from '../../src/store/database.js';
import { migrationSource } from '../../src/store/migrations/index.js';
import { readSchemaState, schemaReadiness } from '../../src/store/schema-state.js';
import { scratchDatabase } from '../../scripts/support/fresh-store.js';
import { openTestDatabase } from '../support/app.js';
import { budget } from '../support/budget.js';

jest.setTimeout(budget(30_000));
const onPostgres = process.env.DATABASE_URL ? describe : describe.skip;
const ALL = await migrationSource.getMigrations([]);
const LAST = ALL.at(-1) as string;

describe('the schema state', () => {
  let db: Database;
  let drop: () => Promise<void>;
  beforeEach(async () => ({ db, drop } = await openTestDatabase()));
  afterEach(async () => {
    await db.close();
    await drop();
  });

  test('a migrated database is current: nothing missing, nothing unknown, ready', async () => {
    const state = await readSchemaState(db.knex);
    expect(state).toEqual({ missing: [], unknown: [] });
    expect(schemaReadiness(state)).toEqual({ name: 'schema', ok: true });
  });

  test('a database without its last migration is behind: the readiness check names it', async () => {
    await db.knex.migrate.down({ migrationSource });
    const state = await readSchemaState(db.knex);
    expect(state.missing).toEqual([LAST]);
    expect(schemaReadiness(state)).toMatchObject({ name: 'schema', ok: false, detail: expect.stringContaining(LAST) });
  });

  test('a database a newer release migrated is ahead: migrate runs and reports the unknown migration instead of refusing it', async () => {
    await db.knex('knex_migrations').insert({ name: '29991231000000_from_a_newer_release', batch: 99, migration_time: new Date() });
    const state = await readSchemaState(db.knex);
    expect(state).toEqual({ missing: [], unknown: ['29991231000000_from_a_newer_release'] });
    expect(schemaReadiness(state).ok).toBe(true);
    // Ahead and behind at once: this release's last migration too is pending.
    await (await migrationSource.getMigration(LAST)).down?.(db.knex);
    await db.knex('knex_migrations').where({ name: LAST }).delete();
    // knex alone would refuse: "The migration directory is corrupt, the following files are missing".
    await expect(migrate(db)).resolves.toEqual({ applied: [LAST], unknown: ['29991231000000_from_a_newer_release'] });
  });
});

onPostgres('the migration lock (PostgreSQL only: a PGlite DATA_DIR belongs to one process, nothing to race)', () => {
  const adminUrl = process.env.DATABASE_URL as string;

  test('eight processes migrating one empty database at once all succeed, and each migration is run and recorded once', async () => {
    const scratch = await scratchDatabase(adminUrl, 'migrators');
    const stores: Database[] = [];
    try {
      for (let index = 0; index < 8; index++) stores.push(await openDatabase({ databaseUrl: scratch.url, poolMax: 2 }));
      const outcomes = await Promise.all(stores.map((store) => migrate(store)));
      // One of them ran everything; the others waited on the lock and found nothing left to do.
      expect(outcomes.map((outcome) => outcome.applied.length).sort((a, b) => a - b)).toEqual([0, 0, 0, 0, 0, 0, 0, ALL.length]);
      const recorded = await stores[0]!.knex('knex_migrations').select('name').orderBy('id');
      expect(recorded.map((row: { name: string }) => row.name)).toEqual(ALL);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
      await scratch.drop();
    }
  });

  test('a migrator waits for the one holding the lock, and gives up after MIGRATION_LOCK_TIMEOUT_MS with a message naming it', async () => {
    const scratch = await scratchDatabase(adminUrl, 'lockwait');
    const holder = new pg.Client({ connectionString: scratch.url });
    await holder.connect();
    const waiting = await openDatabase({ databaseUrl: scratch.url, poolMax: 1, migrationLockTimeoutMs: budget(20_000) });
    const impatient = await openDatabase({ databaseUrl: scratch.url, poolMax: 1, migrationLockTimeoutMs: 200 });
    try {
      // Another process's run, as the lock's session holds it.
      await holder.query('SELECT pg_advisory_lock($1, $2)', [0x63_66_73, 1]);
      await expect(migrate(impatient)).rejects.toThrow(/longer than MIGRATION_LOCK_TIMEOUT_MS=200 ms/);
      const run = migrate(waiting);
      // Released once the migrator is seen waiting for it (pg_locks), not after a guessed delay.
      for (;;) {
        const { rows } = await holder.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
        if (rows[0].n > 0) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(await readSchemaState(waiting.knex)).toEqual({ missing: ALL, unknown: [] });
      await holder.query('SELECT pg_advisory_unlock($1, $2)', [0x63_66_73, 1]);
      await expect(run).resolves.toEqual({ applied: ALL, unknown: [] });
    } finally {
      await holder.end();
      await waiting.close();
      await impatient.close();
      await scratch.drop();
    }
  });
});
