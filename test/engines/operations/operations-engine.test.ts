import { create, fromBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import type { Knex } from 'knex';
import { openTestDatabase } from '../../support/app.js';
import type { Database } from '../../../src/store/database.js';
import { AppError } from '../../../src/errors.js';
import {
  Operations,
  OperationSweeper,
  OperationWorker,
  encodeStatus,
  packOperationRequest,
  redactSecrets,
  type WorkHandler,
} from '../../../src/engines/operations/index.js';
import { toRpcStatus } from '../../../src/handlers/cloud/errors.js';
import { StatusSchema } from '../../../generated/proto/google/rpc/status_pb.js';
import { ServiceErrorSchema } from '../../../generated/proto/cloud/common/v1/error_pb.js';
import { CreateInstanceRequestSchema } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { InstanceSchema } from '../../../generated/proto/cloud/compute/v1/instance_pb.js';

let db: Database;
let drop: () => Promise<void>;
let operations: Operations;
beforeAll(async () => {
  ({ db, drop } = await openTestDatabase());
  operations = new Operations(db.knex);
});
afterAll(async () => {
  await db?.close();
  await drop?.();
});

const workers: OperationWorker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop()));
});

function worker(handlers: Record<string, WorkHandler>, options: { workMs?: number; leaseMs?: number; concurrency?: number } = {}): OperationWorker {
  const created = new OperationWorker({
    knex: db.knex,
    handlers,
    workMs: options.workMs ?? 0,
    leaseMs: options.leaseMs ?? 30_000,
    pollMs: 20,
    concurrency: options.concurrency,
    failureStatus: (error, work) => encodeStatus(toRpcStatus(error, { service: 'test', requestId: work.operationId })),
  });
  workers.push(created);
  return created;
}

async function enqueue(kind: string, resourceId = 'res-1'): Promise<string> {
  const row = await db.knex.transaction((trx) =>
    operations.begin(trx, {
      service: 'test',
      description: kind,
      createdBy: 'tester',
      resourceId,
      parentId: 'project-t',
      request: new Uint8Array(),
      work: { kind },
    }),
  );
  return row.id;
}

function finished(target: OperationWorker, ids: string[]): Promise<void> {
  const pending = new Set(ids);
  return new Promise((resolve) => {
    const onFinished = (id: string) => {
      pending.delete(id);
      if (pending.size === 0) {
        target.off('finished', onFinished);
        resolve();
      }
    };
    target.on('finished', onFinished);
  });
}

test('a worker completes due work and records an OK status with finished_at', async () => {
  const seen: string[] = [];
  const w = worker({ ok: { complete: async (_trx, work) => void seen.push(work.operationId) } });
  w.start();
  const id = await enqueue('ok');
  w.wake();
  await finished(w, [id]);
  const row = await operations.get(id);
  expect(seen).toEqual([id]);
  expect(row?.state).toBe('done');
  expect(row?.finished_at).toBeInstanceOf(Date);
  expect(fromBinary(StatusSchema, row?.status ?? new Uint8Array()).code).toBe(0);
});

test('a failing work item ends its operation with the error status and a ServiceError detail', async () => {
  const failed: string[] = [];
  const w = worker({
    broken: {
      complete: async () => {
        throw new AppError('resource_exhausted', 'no capacity', { detail: { kind: 'too_many_requests', violation: 'capacity' } });
      },
      fail: async (_trx: Knex, work) => void failed.push(work.operationId),
    },
  });
  w.start();
  const id = await enqueue('broken');
  await finished(w, [id]);
  const status = fromBinary(StatusSchema, (await operations.get(id))?.status ?? new Uint8Array());
  expect(status.code).toBe(8);
  expect(status.message).toBe('no capacity');
  const detail = status.details[0] ? anyUnpack(status.details[0], ServiceErrorSchema) : undefined;
  expect(detail?.details.case).toBe('tooManyRequests');
  expect(failed).toEqual([id]);
});

test('work held by a crashed worker is claimed again after its lease and finished once', async () => {
  const completions: string[] = [];
  const handlers = { slow: { complete: async (_trx: Knex, work: { operationId: string }) => void completions.push(work.operationId) } };
  const crashed = worker(handlers, { workMs: 600_000, leaseMs: 300 });
  crashed.start();
  const id = await enqueue('slow');
  // Wait until the first worker holds the item.
  for (;;) {
    const row = await db.knex('operations').where({ id }).first('claimed_by');
    if (row?.claimed_by === crashed.workerId) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await crashed.abandon();
  const heir = worker(handlers, { workMs: 0, leaseMs: 300 });
  const done = finished(heir, [id]);
  heir.start();
  await done;
  expect(completions).toEqual([id]);
  const row = await db.knex('operations').where({ id }).first('attempts', 'state');
  expect(row).toEqual({ attempts: 2, state: 'done' });
});

test('two workers on one database share the work and run each item exactly once', async () => {
  const runs = new Map<string, string[]>();
  const handlersFor = (name: string): Record<string, WorkHandler> => ({
    shared: { complete: async (_trx, work) => void runs.set(work.operationId, [...(runs.get(work.operationId) ?? []), name]) },
  });
  const a = worker(handlersFor('a'), { workMs: 15, concurrency: 4 });
  const b = worker(handlersFor('b'), { workMs: 15, concurrency: 4 });
  const ids = await Promise.all(Array.from({ length: 24 }, (_, index) => enqueue('shared', `res-shared-${index}`)));
  const all = new Set(ids);
  const done = new Promise<void>((resolve) => {
    const check = (id: string) => {
      all.delete(id);
      if (all.size === 0) resolve();
    };
    a.on('finished', check);
    b.on('finished', check);
  });
  a.start();
  b.start();
  await done;
  expect([...runs.keys()].sort()).toEqual([...ids].sort());
  expect([...runs.values()].every((by) => by.length === 1)).toBe(true);
  const byWorker = [...runs.values()].flat();
  expect(byWorker.filter((name) => name === 'a').length).toBeGreaterThan(0);
  expect(byWorker.filter((name) => name === 'b').length).toBeGreaterThan(0);
});

test('the sweeper deletes completed operations past retention, never running ones or ones a live idempotency key answers', async () => {
  const old = await enqueue('sweep-old', 'res-sweep');
  const fresh = await enqueue('sweep-fresh', 'res-sweep');
  const running = await enqueue('sweep-running', 'res-sweep');
  const keyed = await enqueue('sweep-keyed', 'res-sweep');
  const longAgo = new Date(Date.now() - 8 * 86400 * 1000);
  await db
    .knex('operations')
    .whereIn('id', [old, fresh, keyed])
    .update({ state: 'done', status: Buffer.from([8, 0]), finished_at: new Date() });
  await db.knex('operations').whereIn('id', [old, keyed]).update({ finished_at: longAgo, created_at: longAgo });
  await db.knex('operations').where({ id: running }).update({ created_at: longAgo });
  await db.knex('idempotency_keys').insert({ principal: 'p', method: '/m', key: 'k'.repeat(16), request_hash: 'h', operation_id: keyed });
  await db.knex('idempotency_keys').insert({ principal: 'p', method: '/m', key: 'o'.repeat(16), request_hash: 'h', operation_id: null, created_at: longAgo });
  const sweeper = new OperationSweeper({ knex: db.knex, retentionSeconds: 7 * 86400 });
  const result = await sweeper.sweepOnce();
  expect(result).toEqual({ operations: 1, idempotencyKeys: 1 });
  const left = (await db.knex('operations').where('resource_id', 'res-sweep').select('id')).map((row: { id: string }) => row.id).sort();
  expect(left).toEqual([fresh, running, keyed].sort());
  // Once the key is past 24 h, its operation goes too.
  const later = await sweeper.sweepOnce(new Date(Date.now() + 25 * 3600 * 1000));
  expect(later.idempotencyKeys).toBe(1);
  expect(await db.knex('operations').where({ id: keyed }).first()).toBeUndefined();
  expect(await db.knex('operations').where({ id: running }).first()).toBeDefined();
});

const REDACTION_CASES: Array<
  [string, { given: Parameters<typeof create<typeof CreateInstanceRequestSchema>>[1]; want: { cloudInit: string; description: string } }]
> = [
  [
    'a sensitive field is cleared',
    { given: { spec: { cloudInitUserData: '#cloud-config password', description: 'd' } }, want: { cloudInit: '', description: 'd' } },
  ],
  ['other fields are kept', { given: { metadata: { name: 'n' }, spec: { description: 'kept' } }, want: { cloudInit: '', description: 'kept' } }],
  ['an absent parent is fine', { given: {}, want: { cloudInit: '', description: '' } }],
];

test.each(REDACTION_CASES)('redaction: %s', (_name, { given, want }) => {
  const request = create(CreateInstanceRequestSchema, given);
  const redacted = redactSecrets(CreateInstanceRequestSchema, request);
  expect(redacted.spec?.cloudInitUserData ?? '').toBe(want.cloudInit);
  expect(redacted.spec?.description ?? '').toBe(want.description);
  expect(request.spec?.cloudInitUserData ?? '').toBe(given?.spec?.cloudInitUserData ?? '');
  const packed = packOperationRequest(CreateInstanceRequestSchema, request);
  expect(Buffer.from(packed).includes(Buffer.from('password'))).toBe(false);
});

test('redaction reaches secrets at any depth (an Instance carries the spec inside)', () => {
  const instance = create(InstanceSchema, { spec: { cloudInitUserData: 'secret', sshKeys: ['k'] } });
  const redacted = redactSecrets(InstanceSchema, instance);
  expect(redacted.spec?.cloudInitUserData).toBe('');
  expect(redacted.spec?.sshKeys).toEqual(['k']);
});
