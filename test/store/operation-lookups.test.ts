import type { Knex } from 'knex';
import { openTestDatabase } from '../support/app.js';
import type { Database } from '../../src/store/database.js';
import { OperationRepository } from '../../src/store/repositories/operation-repository.js';
import { operationListFilter } from '../../src/services/cloud/list-filter.js';

let db: Database | undefined;
let drop: (() => Promise<void>) | undefined;
beforeAll(async () => {
  ({ db, drop } = await openTestDatabase());
  // Many finished operations of one project and one resource, and nothing open or claimable: the
  // case where a lookup without its own index walks everything ever done.
  await store().raw(
    `INSERT INTO operations (id, service, description, created_by, resource_id, parent_id, request, status, state, finished_at, kind)
     SELECT 'operation-' || lpad(to_hex(i), 20, '0'), CASE WHEN i % 4 = 0 THEN 'iam' ELSE 'compute' END, 'Create instance', 'useraccount-x',
            'instance-' || (i % 10), 'project-' || (i % 3), '\\x00', '\\x0800', 'done', now() - i * interval '1 second', 'compute.instance.create'
     FROM generate_series(1, 20000) AS i`,
  );
  // And some running operations nobody can claim (their work is not in the table): the indexes of
  // running operations by resource and by parent are not empty, so each lookup has one that fits.
  await store().raw(
    `INSERT INTO operations (id, service, description, created_by, resource_id, parent_id, request, state, kind)
     SELECT 'operation-r' || lpad(to_hex(i), 19, '0'), CASE WHEN i % 4 = 0 THEN 'iam' ELSE 'compute' END, 'Create instance', 'useraccount-x',
            'instance-r' || i, 'project-' || (i % 3), '\\x00', 'running', NULL
     FROM generate_series(1, 300) AS i`,
  );
  await store().raw('ANALYZE operations');
});
afterAll(async () => {
  await db?.close();
  await drop?.();
});

function store(): Knex {
  if (!db) throw new Error('the test database did not open');
  return db.knex;
}

/** The plan of every statement `run` sends, as PostgreSQL would execute it (EXPLAIN runs nothing). */
async function plansOf(run: (repository: OperationRepository) => Promise<unknown>): Promise<string[]> {
  const statements: Array<{ sql: string; bindings: readonly unknown[] }> = [];
  const onQuery = (query: { sql: string; bindings?: readonly unknown[] }) => statements.push({ sql: query.sql, bindings: query.bindings ?? [] });
  store().on('query', onQuery);
  try {
    await run(new OperationRepository(store()));
  } finally {
    store().off('query', onQuery);
  }
  const plans: string[] = [];
  for (const { sql, bindings } of statements) {
    const result = await store().raw(`EXPLAIN ${sql.replace(/\$\d+/g, '?')}`, bindings as Knex.RawBinding[]);
    plans.push((result.rows as Array<Record<string, string>>).map((row) => Object.values(row).join('')).join('\n'));
  }
  return plans;
}

test.each([
  ["a worker's claim reads only claimable work", (operations: OperationRepository) => operations.claim('worker-1', 1000), 'operations_claimable'],
  [
    'the running operation of a resource comes from the index of open operations',
    (operations: OperationRepository) => operations.findRunning('instance-3'),
    'operations_running_resource',
  ],
  [
    'ListOperationsByParent reads the range of its parent and service',
    (operations: OperationRepository) => operations.list({ parentId: 'project-1', services: ['compute'], limit: 21 }),
    'operations_parent_service',
  ],
] as const)('%s', async (_name, run, index) => {
  const plans = await plansOf(run);
  expect(plans).toHaveLength(1);
  expect(plans[0]).toContain(index);
  expect(plans[0]).not.toMatch(/Seq Scan on operations/);
});

test.each([
  ['by parent (ListOperationsByParent)', { parentId: 'project-1', services: ['compute'] }, 'operations_running_parent'],
  ['by resource (OperationService.List)', { resourceId: 'instance-3' }, 'operations_running_resource'],
] as const)('a filter for running operations walks the index of running operations, %s', async (_name, target, index) => {
  const filter = operationListFilter('NOT status:* AND description = "Create instance"')!;
  const plans = await plansOf((operations) => operations.listFiltered({ ...target, limit: 21, filter, scanRows: 10_000 }));
  // The page, and where its walk stopped when the page is short.
  expect(plans.length).toBeGreaterThanOrEqual(1);
  for (const plan of plans) {
    expect(plan).toContain(index);
    expect(plan).not.toMatch(/Seq Scan on operations/);
  }
});
