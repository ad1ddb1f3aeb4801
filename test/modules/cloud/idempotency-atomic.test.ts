import { status as GrpcStatus } from '@grpc/grpc-js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { IdempotencyKeys, Operations, type PendingKey } from '../../../src/engines/operations/index.js';
import { expectGrpcError } from '../../support/grpc.js';
import { seedProjects } from '../../support/projects.js';
import { startCloudServer, waitForOperation, type CloudServer } from './fixtures.js';

let cloud: CloudServer;
beforeAll(async () => {
  cloud = await startCloudServer({ COMPUTE_WORK_MS: '50' });
  await seedProjects(cloud.server.app.db.knex, ['project-atomic', 'project-onecommit']);
});
afterAll(() => cloud?.close());

const M = InstanceService.method;

interface TracedQuery {
  sql: string;
  __knexTxId?: string;
}

test('a create with an idempotency key writes the key, the instance and the operation in one transaction', async () => {
  const knex = cloud.server.app.db.knex;
  const writes: TracedQuery[] = [];
  const onQuery = (query: TracedQuery) => {
    // Inserts only: the worker's claims and completions of the operation are updates, after the request.
    if (/^insert into "(idempotency_keys|compute_instances|operations)"/i.test(query.sql)) writes.push(query);
  };
  knex.on('query', onQuery);
  try {
    const key = 'one-commit-key-0000000001';
    const request = { metadata: { parentId: 'project-onecommit', name: 'one-commit-vm' } };
    const { message } = await cloud.grpc.call(M.create, request, { token: cloud.admin.token, headers: { 'x-idempotency-key': key } });
    expect(message.status).toBeUndefined();
    const tables = writes.map((query) => /^insert into "([a-z_]+)"/i.exec(query.sql)?.[1]);
    expect(tables.sort()).toEqual(['compute_instances', 'idempotency_keys', 'operations']);
    const transactions = new Set(writes.map((query) => query.__knexTxId));
    expect(transactions.size).toBe(1);
    expect([...transactions][0]).toEqual(expect.any(String));
    const row = await knex('idempotency_keys').where({ key }).first();
    expect(row?.operation_id).toBe(message.id);
  } finally {
    knex.off('query', onQuery);
  }
});

test('a failure after the operation insert leaves neither key nor instance nor operation, and a retry with the key then runs once', async () => {
  const knex = cloud.server.app.db.knex;
  const parentId = 'project-atomic';
  const key = 'atomic-failure-key-000001';
  const request = { metadata: { parentId, name: 'atomic-vm' } };
  // The injected failure: every operation of the project fails on insert, after the key and the instance were written.
  await knex.raw(
    `CREATE FUNCTION fail_atomic_insert() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected failure after the operation insert'; END $$ LANGUAGE plpgsql`,
  );
  await knex.raw(
    `CREATE TRIGGER fail_atomic_insert AFTER INSERT ON operations FOR EACH ROW WHEN (NEW.parent_id = 'project-atomic') EXECUTE FUNCTION fail_atomic_insert()`,
  );
  try {
    const error = await expectGrpcError(cloud.grpc.call(M.create, request, { token: cloud.admin.token, headers: { 'x-idempotency-key': key } }));
    expect(error.code).toBe(GrpcStatus.INTERNAL);
  } finally {
    await knex.raw('DROP TRIGGER fail_atomic_insert ON operations');
    await knex.raw('DROP FUNCTION fail_atomic_insert()');
  }
  expect(await knex('idempotency_keys').where({ key })).toEqual([]);
  expect(await knex('compute_instances').where({ parent_id: parentId })).toEqual([]);
  expect(await knex('operations').where({ parent_id: parentId })).toEqual([]);

  const first = await cloud.grpc.call(M.create, request, { token: cloud.admin.token, headers: { 'x-idempotency-key': key } });
  expect(first.headers.get('x-idempotent-replay')).toEqual([]);
  const retry = await cloud.grpc.call(M.create, request, { token: cloud.admin.token, headers: { 'x-idempotency-key': key } });
  expect(retry.message.id).toBe(first.message.id);
  expect(retry.headers.get('x-idempotent-replay')).toEqual(['true']);
  await waitForOperation(cloud.grpc, cloud.admin.token, first.message.id);
  const instances = await knex('compute_instances').where({ parent_id: parentId }).select('id');
  expect(instances.map((row: { id: string }) => row.id)).toEqual([first.message.resourceId]);
  const operations = await knex('operations').where({ parent_id: parentId }).select('id');
  expect(operations.map((row: { id: string }) => row.id)).toEqual([first.message.id]);
});

test('a retry of a finished create whose name is taken by then answers the first operation, not ALREADY_EXISTS', async () => {
  const key = 'retry-after-done-key-0001';
  const request = { metadata: { parentId: 'project-onecommit', name: 'retried-vm' } };
  const first = await cloud.grpc.call(M.create, request, { token: cloud.admin.token, headers: { 'x-idempotency-key': key } });
  await waitForOperation(cloud.grpc, cloud.admin.token, first.message.id);
  const retry = await cloud.grpc.call(M.create, request, { token: cloud.admin.token, headers: { 'x-idempotency-key': key } });
  expect(retry.message.id).toBe(first.message.id);
  expect(retry.message.status?.code).toBe(0);
  const other = await expectGrpcError(
    cloud.grpc.call(M.create, request, { token: cloud.admin.token, headers: { 'x-idempotency-key': 'another-key-0000000000001' } }),
  );
  expect(other.code).toBe(GrpcStatus.ALREADY_EXISTS);
});

test('20 concurrent atomic runs of one key, each in its own transaction, commit one operation and all answer it', async () => {
  const knex = cloud.server.app.db.knex;
  const operations = new Operations(knex);
  const keys = new IdempotencyKeys(knex);
  const scope = { principal: 'useraccount-atomic', method: '/test.Atomic/Create', key: 'atomic-concurrent-key-01' };
  const work = (idempotency: PendingKey) =>
    knex.transaction(async (trx) => {
      const row = await operations.begin(trx, {
        idempotency,
        service: 'test',
        description: 'atomic',
        createdBy: scope.principal,
        resourceId: 'res-atomic',
        parentId: 'project-atomic-engine',
        request: new Uint8Array(),
        status: new Uint8Array([8, 0]),
      });
      return row.id;
    });
  const results = await Promise.all(Array.from({ length: 20 }, () => keys.runAtomic(scope, 'hash-1', work)));
  const ids = new Set(results.map((result) => result.operationId));
  expect(ids.size).toBe(1);
  expect(results.filter((result) => !result.replayed)).toHaveLength(1);
  const stored = await knex('operations').where({ parent_id: 'project-atomic-engine' }).select('id');
  expect(stored.map((row: { id: string }) => row.id)).toEqual([...ids]);
  expect((await knex('idempotency_keys').where(scope).first())?.operation_id).toBe([...ids][0]);
  await expect(keys.runAtomic(scope, 'hash-2', work)).rejects.toMatchObject({ code: 'invalid_argument' });
});
