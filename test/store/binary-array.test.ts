import { binaryArray, binaryJsonb, BYTEA_OID, JSONB_OID } from '../../src/store/binary-array.js';
import type { Database } from '../../src/store/database.js';
import { openTestDatabase } from '../support/app.js';

/**
 * Binary array parameters through knex on the test store (PostgreSQL with DATABASE_URL, else PGlite
 * through src/store/pglite): both drivers send bytes as a binary parameter, and PostgreSQL reads them
 * with the array type's own receive function.
 */
let store: { db: Database; drop(): Promise<void> } | undefined;
beforeAll(async () => {
  store = await openTestDatabase();
});
afterAll(() => store?.drop());

const every = Buffer.from(Array.from({ length: 256 }, (_, index) => index));

test('bytea[]: every byte value, an empty element and NULL arrive as sent, in order', async () => {
  const sent = [every, Buffer.alloc(0), null, Buffer.from('\\x41"{,}')];
  const { rows } = await store!.db.knex.raw('SELECT v, ord FROM unnest(?::bytea[]) WITH ORDINALITY AS t(v, ord) ORDER BY ord', [binaryArray(BYTEA_OID, sent)]);
  expect(rows.map((row: { v: Uint8Array | null }) => (row.v === null ? null : Buffer.from(row.v)))).toEqual(sent);
});

test('jsonb[]: quotes, backslashes and non-ASCII text arrive as the same JSON', async () => {
  const values = [
    [
      ['X-Quote', 'a"b\\c'],
      ['Host', 'é.example'],
    ],
    { nested: { n: 1 } },
  ];
  const { rows } = await store!.db.knex.raw('SELECT v::text AS v FROM unnest(?::jsonb[]) WITH ORDINALITY AS t(v, ord) ORDER BY ord', [
    binaryArray(
      JSONB_OID,
      values.map((value) => binaryJsonb(JSON.stringify(value))),
    ),
  ]);
  expect(rows.map((row: { v: string }) => JSON.parse(row.v))).toEqual(values);
});

test('the empty array is an empty array of the element type', async () => {
  const { rows } = await store!.db.knex.raw('SELECT cardinality(?::bytea[]) AS n', [binaryArray(BYTEA_OID, [])]);
  expect(Number(rows[0].n)).toBe(0);
});

test('an array whose element type is not the parameter type is refused by the database, not misread', async () => {
  await expect(store!.db.knex.raw('SELECT ?::bytea[] AS v', [binaryArray(JSONB_OID, [binaryJsonb('1')])])).rejects.toThrow(
    /element type 3802 \(jsonb\) instead of expected 17 \(bytea\)/,
  );
});
