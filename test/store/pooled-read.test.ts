import { scratchDatabase } from '../../scripts/support/fresh-store.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { pooledRead } from '../../src/store/pool-fast-path/pooled-read.js';
import { openTestDatabase } from '../support/app.js';

/** tarn's public counters, through Knex's client. */
interface PoolCounters {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

const url = process.env.DATABASE_URL;

/** Until the pool has nothing in use or waiting (an acquire made on the queue's behalf may still be passing through tarn); false after 1 s. */
async function idle(pool: PoolCounters): Promise<boolean> {
  const until = performance.now() + 1000;
  while (pool.numUsed() > 0 || pool.numPendingAcquires() > 0) {
    if (performance.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return true;
}
const NUMBER = { name: 'test.number', text: 'SELECT $1::int AS n' };

// The hand-over queue serves Knex's pg pool; PGlite's dialect call has one connection and no pool to share.
(url ? describe : describe.skip)('pooled reads on PostgreSQL (pooledRead)', () => {
  let drop: () => Promise<void>;
  let adminUrl: string;
  const open: Database[] = [];
  beforeAll(async () => {
    const scratch = await scratchDatabase(url ?? '', 'pooled');
    adminUrl = scratch.url;
    drop = scratch.drop;
  });
  afterAll(async () => {
    await Promise.all(open.map((db) => db.close()));
    await drop?.();
  });

  async function database(poolMax: number, acquireTimeoutMs = 5000): Promise<{ db: Database; pool: PoolCounters }> {
    const db = await openDatabase({ databaseUrl: adminUrl, poolMax, acquireTimeoutMs });
    open.push(db);
    return { db, pool: (db.knex.client as { pool: PoolCounters }).pool };
  }

  test('many more reads than connections each get their own rows, and every connection is free afterwards', async () => {
    const { db, pool } = await database(2);
    const reads = Array.from({ length: 200 }, (_, n) => pooledRead<{ n: number }>(db.knex, NUMBER, [n]));
    expect((await Promise.all(reads)).map((rows) => rows[0]?.n)).toEqual(Array.from({ length: 200 }, (_, n) => n));
    expect(await idle(pool)).toBe(true);
    expect(pool.numFree()).toBeLessThanOrEqual(2);
  });

  test('a transaction waiting for the only connection gets it while reads keep coming', async () => {
    const { db } = await database(1, 3000);
    let reading = true;
    let reads = 0;
    const stream = async () => {
      while (reading) {
        await pooledRead(db.knex, NUMBER, [reads++]);
      }
    };
    const streams = [stream(), stream(), stream()];
    // Without "others first", the reads would pass the connection among themselves until the transaction's acquire timed out.
    const started = performance.now();
    const answer = await db.knex.transaction((trx) => trx.raw<{ rows: Array<{ v: number }> }>('SELECT 7 AS v'));
    const waited = performance.now() - started;
    reading = false;
    await Promise.all(streams);
    expect(answer.rows[0]?.v).toBe(7);
    expect(waited).toBeLessThan(1500);
    expect(reads).toBeGreaterThan(3);
  });

  test('a read that finds no connection within the acquire timeout fails with Knex timeout error, and reads work again afterwards', async () => {
    const { db } = await database(1, 200);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const transaction = db.knex.transaction(async (trx) => {
      await trx.raw('SELECT 1');
      await held;
    });
    // The transaction holds the one connection.
    while ((db.knex.client as { pool: PoolCounters }).pool.numUsed() === 0) await new Promise((resolve) => setImmediate(resolve));
    const started = performance.now();
    const failure = await pooledRead(db.knex, NUMBER, [1]).catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: 'KnexTimeoutError' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    release();
    await transaction;
    expect(await pooledRead(db.knex, NUMBER, [2])).toEqual([{ n: 2 }]);
  });

  test('a read that fails does not pass its connection on, and the reads queued behind it still succeed', async () => {
    const { db, pool } = await database(1);
    const failing = pooledRead(db.knex, { text: 'SELECT $1::int / 0 AS n' }, [1]).catch((error: unknown) => error);
    const after = Array.from({ length: 5 }, (_, n) => pooledRead<{ n: number }>(db.knex, NUMBER, [n]));
    expect(await failing).toMatchObject({ code: '22012' });
    expect((await Promise.all(after)).map((rows) => rows[0]?.n)).toEqual([0, 1, 2, 3, 4]);
    expect(await idle(pool)).toBe(true);
  });
});

test('pooled reads answer on the configured store', async () => {
  // Both stores: PGlite through its dialect call, PostgreSQL through the queue above.
  const { db, drop } = await openTestDatabase();
  try {
    const rows = await pooledRead<{ n: number }>(db.knex, NUMBER, [41]);
    expect(rows).toEqual([{ n: 41 }]);
  } finally {
    await db.close();
    await drop();
  }
});
