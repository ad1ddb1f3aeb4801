import knexModule from 'knex';
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

  test("answers the rows and values Knex's own query answers", async () => {
    const { db } = await database(2);
    const statement = {
      name: 'test.types',
      text: `SELECT $1::int8 AS big, $2::timestamptz AS at, $3::jsonb AS doc, $4::text[] AS tags, $5::numeric AS amount, NULL::text AS none, $6::bool AS ok`,
    };
    const values = ['9007199254740993', '2024-01-02T03:04:05Z', '{"a":[1,2]}', '{x,y}', '12.50', true];
    const theirs = await db.knex.raw<{ rows: unknown[] }>(statement.text.replace(/\$(\d)/g, '?'), values);
    expect(await pooledRead(db.knex, statement, values)).toEqual(theirs.rows);
  });

  test("an idle connection is claimed as tarn's acquire claims it (counted used while the read runs), and is usable by Knex's check", async () => {
    const { db, pool } = await database(1);
    await pooledRead(db.knex, NUMBER, [1]);
    expect(await idle(pool)).toBe(true);
    const tarn = (db.knex.client as { pool: { free: Array<{ resource: { readyForQuery?: boolean } }> } }).pool;
    // What tarn-internals.ts's `usable` reads of an idle pg connection.
    expect(tarn.free[0]?.resource.readyForQuery).toBe(true);
    const read = pooledRead(db.knex, NUMBER, [2]);
    expect({ used: pool.numUsed(), free: pool.numFree() }).toEqual({ used: 1, free: 0 });
    expect(await read).toEqual([{ n: 2 }]);
    expect(await idle(pool)).toBe(true);
    expect(pool.numFree()).toBe(1);
  });

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

test('the knex, tarn and pg internals the queue reaches into have the shapes it reads (src/store/pool-fast-path/tarn-internals.ts)', async () => {
  // A pg client of Knex with no connection made (min 0): the pool, the client calls and pg's classes as the queue uses them.
  const knex = knexModule({ client: 'pg', connection: 'postgres://nobody@127.0.0.1:1/none', pool: { min: 0, max: 2, acquireTimeoutMillis: 1234 } });
  try {
    const client = knex.client as Record<string, unknown> & {
      pool: Record<string, unknown>;
      driver: { Client: new () => object };
      config: { client: unknown };
    };
    expect(client.config.client).toBe('pg');
    for (const call of ['acquireConnection', 'releaseConnection', '_query']) expect({ call, type: typeof client[call] }).toEqual({ call, type: 'function' });
    const pool = client.pool;
    for (const list of ['free', 'used', 'pendingAcquires', 'pendingValidations', 'pendingCreates']) {
      expect({ list, isArray: Array.isArray(pool[list]) }).toEqual({ list, isArray: true });
    }
    expect({ max: pool.max, acquireTimeoutMillis: pool.acquireTimeoutMillis, destroyed: pool.destroyed, release: typeof pool.release }).toEqual({
      max: 2,
      acquireTimeoutMillis: 1234,
      destroyed: false,
      release: 'function',
    });
    const connection = new (client.driver.Client as new (config: object) => object)({ query_timeout: 4321 }) as {
      constructor: { Query?: unknown };
      query?: unknown;
      connectionParameters?: { query_timeout?: unknown };
    };
    expect({ Query: typeof connection.constructor.Query, query: typeof connection.query }).toEqual({ Query: 'function', query: 'function' });
    // The timeout pg's query() reads for its timer per query, which the queue keeps itself instead.
    expect(connection.connectionParameters?.query_timeout).toBe(4321);
    expect(new knexModule.KnexTimeoutError('x')).toBeInstanceOf(Error);
  } finally {
    await knex.destroy();
  }
});
