import { PGlite } from '@electric-sql/pglite';
import { pgliteStartParams } from '../../src/store/pglite/init.js';
import { PgliteStatements } from '../../src/store/pglite/statements.js';
import { budget } from '../support/budget.js';

/** The engine without the server: PgliteStatements against PGlite's own query() on the same instance. */
let pglite: PGlite;
let statements: PgliteStatements;

beforeAll(async () => {
  pglite = await PGlite.create({ startParams: pgliteStartParams(16) });
  statements = new PgliteStatements(pglite);
  await pglite.exec(`CREATE TABLE items (id int PRIMARY KEY, label text, big int8, ok boolean, doc jsonb, raw json, data bytea,
    at timestamptz, amount numeric, tags text[], uid uuid)`);
  await pglite.exec(`INSERT INTO items VALUES
    (1, 'one', 9007199254740993, true, '{"a":[1,2]}', '{"b":null}', '\\x00ff', '2024-01-02T03:04:05Z', 12.50, '{x,y}', '6c1f4f0e-7d2b-4b8e-9a37-1d2f3c4b5a69'),
    (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`);
}, budget(20_000));

afterAll(async () => {
  if (pglite && !pglite.closed) await pglite.close();
});

describe('results', () => {
  // PGlite.query builds its result with parse.parseResults; PgliteStatements with its own loop: the same values, keys and shape.
  test.each([
    ['every column type, one row', 'SELECT * FROM items WHERE id = $1', [1]],
    ['NULLs', 'SELECT * FROM items WHERE id = $1', [2]],
    ['several rows, ordered', 'SELECT id, label FROM items WHERE id = ANY($1::int[]) ORDER BY id', [[1, 2]]],
    ['no row', 'SELECT id FROM items WHERE id = $1', [99]],
    ['a repeated column name (the last wins)', 'SELECT 1 AS a, 2 AS a, $1::text AS b', ['x']],
    ['a column named __proto__ (an own property)', 'SELECT $1::text AS "__proto__", 2 AS ok', ['p']],
    ['no parameters (unnamed)', 'SELECT count(*)::int AS n, now() IS NOT NULL AS t FROM items', []],
    [
      'bytes beside text (sent as a binary parameter)',
      'SELECT $1::bytea AS b, octet_length($1::bytea) AS n, $2::text AS t',
      [Buffer.from([0, 255, 92, 34, 123]), 'x'],
    ],
  ])('%s: as PGlite.query answers', async (_name, sql, params) => {
    const ours = await statements.run(sql, params);
    expect(ours).toStrictEqual(await pglite.query(sql, params));
    for (const row of ours.rows as object[]) expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
  });

  test('writes count their rows as PGlite.query does (INSERT, UPDATE, DELETE, DDL)', async () => {
    const cases: Array<[string, unknown[]]> = [
      ['INSERT INTO items (id, label) VALUES ($1, $2), ($3, $4)', [10, 'a', 11, 'b']],
      ['UPDATE items SET label = $1 WHERE id >= $2', ['z', 10]],
      ['INSERT INTO items (id) VALUES ($1) RETURNING id, label', [12]],
      ['DELETE FROM items WHERE id >= $1', [10]],
    ];
    for (const [sql, params] of cases) {
      await pglite.exec('BEGIN');
      const theirs = await pglite.query(sql, params);
      await pglite.exec('ROLLBACK');
      expect(await statements.run(sql, params)).toStrictEqual(theirs);
    }
    await pglite.exec('BEGIN');
    const ddl = await pglite.query('CREATE TABLE scratch (x int)');
    await pglite.exec('ROLLBACK');
    expect(await statements.run('CREATE TABLE scratch (x int)', [])).toStrictEqual(ddl);
    expect(await statements.run('DROP TABLE scratch', [])).toMatchObject({ command: 'DROP', affectedRows: 0, rows: [] });
  });
});

describe('the queue', () => {
  test('concurrent statements run in arrival order, each answered with its own result', async () => {
    await statements.run('CREATE TABLE log (n int, seen int)', []);
    const count = 200;
    const answers = await Promise.all(
      Array.from({ length: count }, (_, n) => statements.run('INSERT INTO log VALUES ($1, (SELECT count(*) FROM log)) RETURNING n, seen', [n])),
    );
    // Each statement saw exactly the rows inserted before it: none ran out of order or concurrently.
    expect(answers.map((answer) => answer.rows[0])).toEqual(Array.from({ length: count }, (_, n) => ({ n, seen: n })));
    await statements.run('DROP TABLE log', []);
  });

  test("a failing statement rejects alone, with PGlite's error fields; the ones queued after it still run", async () => {
    const [before, failing, after] = await Promise.allSettled([
      statements.run('SELECT $1::int AS n', [1]),
      statements.run('SELECT * FROM missing_table WHERE id = $1', [1]),
      statements.run('SELECT $1::int AS n', [3]),
    ]);
    expect(before).toMatchObject({ status: 'fulfilled', value: { rows: [{ n: 1 }] } });
    expect(failing).toMatchObject({
      status: 'rejected',
      reason: { code: '42P01', query: 'SELECT * FROM missing_table WHERE id = $1', params: [1] },
    });
    expect(after).toMatchObject({ status: 'fulfilled', value: { rows: [{ n: 3 }] } });
  });

  test("a transaction's statements keep their order, and PGlite's own query() gets the lock between turns of the event loop", async () => {
    await statements.run('CREATE TABLE ledger (n int)', []);
    const transaction = (async () => {
      await statements.run('BEGIN', []);
      for (let n = 0; n < 5; n++) {
        await statements.run('INSERT INTO ledger VALUES ($1)', [n]);
        // Other work between statements, as a request handler has.
        await new Promise((resolve) => setImmediate(resolve));
      }
      await statements.run('COMMIT', []);
    })();
    // query() takes the same lock: it must neither deadlock nor break into the statements' protocol exchanges.
    const direct = await pglite.query<{ n: number }>('SELECT 42 AS n');
    await transaction;
    expect(direct.rows).toEqual([{ n: 42 }]);
    expect((await statements.run('SELECT array_agg(n ORDER BY n) AS ns FROM ledger WHERE n >= $1', [0])).rows).toEqual([{ ns: [0, 1, 2, 3, 4] }]);
    await statements.run('DROP TABLE ledger', []);
  });

  test('a prepared statement is re-prepared after a schema change', async () => {
    await statements.run('CREATE TABLE shape (a int)', []);
    await statements.run('INSERT INTO shape VALUES ($1)', [1]);
    expect((await statements.run('SELECT * FROM shape WHERE a = $1', [1])).rows).toEqual([{ a: 1 }]);
    await statements.run('ALTER TABLE shape ADD COLUMN b text', []);
    expect((await statements.run('SELECT * FROM shape WHERE a = $1', [1])).rows).toEqual([{ a: 1, b: null }]);
    await statements.run('DROP TABLE shape', []);
  });

  test(
    'close() waits for the lock and the statements after it fail clearly',
    async () => {
      const own = await PGlite.create({ startParams: pgliteStartParams(16) });
      const mine = new PgliteStatements(own);
      const pending = Array.from({ length: 20 }, (_, n) => mine.run('SELECT $1::int AS n', [n]));
      const closing = own.close();
      expect((await Promise.all(pending)).map((result) => result.rows[0])).toEqual(Array.from({ length: 20 }, (_, n) => ({ n })));
      await closing;
      await expect(mine.run('SELECT $1::int AS n', [1])).rejects.toThrow('PGlite is closed');
    },
    budget(20_000),
  );
});
