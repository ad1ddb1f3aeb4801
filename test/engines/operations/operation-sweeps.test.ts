import type { Knex } from 'knex';
import { openTestDatabase } from '../../support/app.js';
import type { Database } from '../../../src/store/database.js';
import { OperationSweeper } from '../../../src/engines/operations/index.js';
import { ResourceRepository } from '../../../src/store/repositories/resource-repository.js';

let db: Database | undefined;
let drop: (() => Promise<void>) | undefined;
beforeAll(async () => {
  ({ db, drop } = await openTestDatabase());
});
afterAll(async () => {
  await db?.close();
  await drop?.();
});

function store(): Knex {
  if (!db) throw new Error('the test database did not open');
  return db.knex;
}

const DAY = 86400 * 1000;
const OK = Buffer.from([8, 0]);

/** Inserts operations shaped like the server's (done with a status, or running without one). */
async function insertOperations(prefix: string, count: number, shape: { done: boolean; finishedAt?: Date; resourceId?: string }): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, index) => `${prefix}-${String(index).padStart(4, '0')}`);
  await store()('operations').insert(
    ids.map((id) => ({
      id,
      service: 'compute',
      description: 'Create instance',
      created_by: 'useraccount-sweep',
      resource_id: shape.resourceId ?? `instance-${id}`,
      parent_id: 'project-sweep',
      request: Buffer.alloc(0),
      status: shape.done ? OK : null,
      state: shape.done ? 'done' : 'running',
      finished_at: shape.done ? (shape.finishedAt ?? new Date()) : null,
      created_at: new Date(Date.now() - 9 * DAY),
    })),
  );
  return ids;
}

/** Counts the statements a sweep sends, by the table they delete from, while `run` runs. */
async function countingStatements<T>(run: () => Promise<T>): Promise<{ result: T; retention: number; keyExpiry: number }> {
  const counts = { retention: 0, keyExpiry: 0 };
  const onQuery = (query: { sql: string }) => {
    if (/DELETE FROM operations/.test(query.sql)) counts.retention++;
    if (/DELETE FROM idempotency_keys/.test(query.sql)) counts.keyExpiry++;
  };
  store().on('query', onQuery);
  try {
    const result = await run();
    return { result, ...counts };
  } finally {
    store().off('query', onQuery);
  }
}

afterEach(async () => {
  await store()('idempotency_keys').delete();
  await store()('operations').delete();
});

test('retention deletes a backlog in statements of at most the batch size, never a running operation', async () => {
  const old = new Date(Date.now() - 8 * DAY);
  const expired = await insertOperations('op-old', 23, { done: true, finishedAt: old });
  const running = await insertOperations('op-running', 4, { done: false });
  const recent = await insertOperations('op-recent', 3, { done: true });
  const sweeper = new OperationSweeper({ knex: store(), retentionSeconds: 7 * 86400, batchSize: { operations: 5, keys: 5 } });

  const { result, retention } = await countingStatements(() => sweeper.sweepOnce());

  expect(result.operations).toBe(expired.length);
  // 23 rows by 5: four full statements and one with 3 rows, which ends the sweep.
  expect(retention).toBe(5);
  const left = (await store()('operations').select('id').orderBy('id')).map((row: { id: string }) => row.id);
  expect(left).toEqual([...running, ...recent].sort());
});

test('retention keeps operations a live idempotency key answers with, reading past them once even when their finished_at ties', async () => {
  const old = new Date(Date.now() - 8 * DAY);
  // Seven kept rows with one finished_at: the range after them must move by id, or the sweep would loop or stop early.
  const keyed = await insertOperations('op-keyed', 7, { done: true, finishedAt: old });
  const expired = await insertOperations('op-plain', 6, { done: true, finishedAt: old });
  await store()('idempotency_keys').insert(
    keyed.map((id, index) => ({ principal: 'p', method: '/m', key: `key-${String(index).padStart(12, '0')}`, request_hash: 'h', operation_id: id })),
  );
  const sweeper = new OperationSweeper({ knex: store(), retentionSeconds: 7 * 86400, batchSize: { operations: 5, keys: 5 } });

  const { result, retention } = await countingStatements(() => sweeper.sweepOnce());

  expect(result).toEqual({ operations: expired.length, idempotencyKeys: 0 });
  // 13 rows looked at, 5 per statement: 3 statements, each row read once.
  expect(retention).toBe(3);
  const left = (await store()('operations').select('id').orderBy('id')).map((row: { id: string }) => row.id);
  expect(left).toEqual(keyed);
});

test('idempotency keys past 24 h expire in chunks of the batch size, younger ones stay', async () => {
  const longAgo = new Date(Date.now() - 2 * DAY);
  const key = (prefix: string, index: number) => `${prefix}-${String(index).padStart(12, '0')}`;
  await store()('idempotency_keys').insert([
    ...Array.from({ length: 12 }, (_, index) => ({ principal: 'p', method: '/m', key: key('old', index), request_hash: 'h', created_at: longAgo })),
    ...Array.from({ length: 2 }, (_, index) => ({ principal: 'p', method: '/m', key: key('new', index), request_hash: 'h' })),
  ]);
  const sweeper = new OperationSweeper({ knex: store(), retentionSeconds: 7 * 86400, batchSize: { operations: 5, keys: 5 } });

  const { result, keyExpiry } = await countingStatements(() => sweeper.sweepOnce());

  expect(result.idempotencyKeys).toBe(12);
  // 5 + 5 + 2: the short chunk ends the expiry.
  expect(keyExpiry).toBe(3);
  const left = (await store()('idempotency_keys').select('key').orderBy('key')).map((row: { key: string }) => row.key);
  expect(left).toEqual([key('new', 0), key('new', 1)]);
});

test('a quota count stops at the quota, whatever the parent holds', async () => {
  const repository = new ResourceRepository(store(), 'compute_instances');
  await store()('compute_instances').insert(
    Array.from({ length: 12 }, (_, index) => ({
      id: `instance-quota-${index}`,
      parent_id: 'project-quota',
      name: `vm-${index}`,
      resource_version: 1,
      data: Buffer.alloc(0),
    })),
  );
  try {
    expect(await repository.countByParent('project-quota', store(), 5)).toBe(5);
    expect(await repository.countByParent('project-quota', store(), 100)).toBe(12);
    expect(await repository.countByParent('project-quota')).toBe(12);
  } finally {
    await store()('compute_instances').where({ parent_id: 'project-quota' }).delete();
  }
});
