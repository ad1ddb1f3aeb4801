import { status as GrpcStatus } from '@grpc/grpc-js';
import { createConnectTransport } from '@connectrpc/connect-node';
import { create, toBinary } from '@bufbuild/protobuf';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import type { Operation } from '../../../generated/proto/cloud/common/v1/operation_pb.js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { StatusSchema } from '../../../generated/proto/google/rpc/status_pb.js';
import { OperationRepository } from '../../../src/store/repositories/operation-repository.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCloudSdk } from '../../../src/sdk/index.js';
import { runCfs } from '../../support/cfs.js';
import { seedProjects } from '../../support/projects.js';
import { ConnectTestClient, expectGrpcError, type RpcTestClient } from '../../support/grpc.js';
import { startCloudServer, waitForOperation, type CloudServer } from './fixtures.js';

/*
 * Filtered operation lists (OperationService.List, InstanceService.ListOperationsByParent) over gRPC
 * and Connect (docs/cloud-api.md, "List filters"). The server examines at most SCAN_ROWS rows per
 * filtered page, so the walks below cross short pages: every assertion is on a whole walk.
 */

const SCAN_ROWS = 5;
const OPS = 'project-opfilters';
const GROWING = 'project-opsgrowing';

let cloud: CloudServer;
let clients: Array<[string, RpcTestClient]>;
/** Instance A: created, updated four times, stopped, started (7 operations, all done, code 0). */
let a: string;
/** Instance B: created, then a failed operation (code 9) and a running one recorded on it. */
let b: string;
let history: { a: Operation[]; b: Operation[] };

async function done(operation: Promise<{ message: Operation }>): Promise<Operation> {
  return waitForOperation(cloud.grpc, cloud.admin.token, (await operation).message.id);
}

async function update(id: string, description: string): Promise<Operation> {
  return done(cloud.grpc.call(InstanceService.method.update, { metadata: { id }, spec: { description } }, { token: cloud.admin.token }));
}

async function createInstance(parentId: string, name: string): Promise<string> {
  return (await done(cloud.grpc.call(InstanceService.method.create, { metadata: { parentId, name } }, { token: cloud.admin.token }))).resourceId;
}

/** Records an operation as the engine does (OperationRepository.insert): its work not held by any worker, or already complete with `code`. */
async function recordOperation(resourceId: string, parentId: string, description: string, code: number | undefined): Promise<void> {
  await new OperationRepository(cloud.server.app.db.knex).insert({
    id: `operation-${description.replace(/\W/g, '').toLowerCase()}${Date.now().toString(16)}`,
    service: 'compute',
    description,
    created_by: 'useraccount-recorded',
    resource_id: resourceId,
    parent_id: parentId,
    request: new Uint8Array(),
    request_headers: {},
    status: code === undefined ? null : toBinary(StatusSchema, create(StatusSchema, { code, message: `failed with ${code}` })),
    progress: null,
    kind: null,
    payload: {},
    state: code === undefined ? 'running' : 'done',
    finished: code !== undefined,
  });
}

async function unfiltered(resourceId: string): Promise<Operation[]> {
  const { message } = await cloud.grpc.call(OperationService.method.list, { resourceId, pageSize: 1000n }, { token: cloud.admin.token });
  return message.operations;
}

beforeAll(async () => {
  cloud = await startCloudServer({ LIST_FILTER_SCAN_ROWS: String(SCAN_ROWS) });
  await seedProjects(cloud.server.app.db.knex, [OPS, GROWING]);
  clients = [
    ['gRPC', cloud.grpc],
    ['Connect', new ConnectTestClient(createConnectTransport({ baseUrl: cloud.server.url, httpVersion: '1.1' }))],
  ];
  a = await createInstance(OPS, 'vm-a');
  for (let index = 0; index < 4; index++) await update(a, `revision ${index}`);
  await done(cloud.grpc.call(InstanceService.method.stop, { id: a }, { token: cloud.admin.token }));
  await done(cloud.grpc.call(InstanceService.method.start, { id: a }, { token: cloud.admin.token }));
  b = await createInstance(OPS, 'vm-b');
  await recordOperation(b, OPS, 'Resize instance', 9);
  await recordOperation(b, OPS, 'Migrate instance', undefined);
  history = { a: await unfiltered(a), b: await unfiltered(b) };
}, 120_000);

afterAll(async () => {
  await cloud?.close();
});

/** Every page of a filtered OperationService.List (or ListOperationsByParent with `parentId`): the ids in order and the pages' sizes. */
async function walk(
  client: RpcTestClient,
  target: { resourceId: string } | { parentId: string },
  filter: string,
  pageSize = 50n,
  between?: () => Promise<void>,
) {
  const ids: string[] = [];
  const pages: number[] = [];
  let pageToken = '';
  for (let guard = 0; guard < 100; guard++) {
    const { message } =
      'resourceId' in target
        ? await client.call(OperationService.method.list, { ...target, filter, pageSize, pageToken }, { token: cloud.reader.token })
        : await client.call(InstanceService.method.listOperationsByParent, { ...target, filter, pageSize, pageToken }, { token: cloud.reader.token });
    ids.push(...message.operations.map((operation) => operation.id));
    pages.push(message.operations.length);
    if (message.nextPageToken === '') return { ids, pages };
    pageToken = message.nextPageToken;
    await between?.();
  }
  throw new Error('the walk did not end');
}

const idsWhere = (operations: Operation[], predicate: (operation: Operation) => boolean) => operations.filter(predicate).map((operation) => operation.id);
const time = (operation: Operation, field: 'createdAt' | 'finishedAt') => timestampDate(operation[field]!).getTime();
const iso = (operation: Operation, field: 'createdAt' | 'finishedAt') => timestampDate(operation[field]!).toISOString();

const CASES: Array<[string, () => { resourceId: string; filter: string; want: string[] }]> = [
  [
    'by description',
    () => ({ resourceId: a, filter: 'description = "Update instance"', want: idsWhere(history.a, (o) => o.description === 'Update instance') }),
  ],
  ['running (NOT status:*)', () => ({ resourceId: b, filter: 'NOT status:*', want: idsWhere(history.b, (o) => o.status === undefined) })],
  ['done (status:*)', () => ({ resourceId: b, filter: 'status:*', want: idsWhere(history.b, (o) => o.status !== undefined) })],
  ['succeeded (status.code = 0)', () => ({ resourceId: b, filter: 'status.code = 0', want: idsWhere(history.b, (o) => o.status?.code === 0) })],
  ['failed (status.code > 0)', () => ({ resourceId: b, filter: 'status.code > 0', want: idsWhere(history.b, (o) => (o.status?.code ?? 0) > 0) })],
  [
    'status.code != 0 (NOT =: a running one too)',
    () => ({ resourceId: b, filter: 'status.code != 0', want: idsWhere(history.b, (o) => o.status?.code !== 0) }),
  ],
  [
    'by creator',
    () => ({ resourceId: b, filter: 'created_by = "useraccount-recorded"', want: idsWhere(history.b, (o) => o.createdBy === 'useraccount-recorded') }),
  ],
  ['by id', () => ({ resourceId: a, filter: `id = "${history.a[2]!.id}"`, want: [history.a[2]!.id] })],
  ['by resource (proto and JSON names)', () => ({ resourceId: a, filter: `resource_id = "${a}" AND resourceId = "${a}"`, want: history.a.map((o) => o.id) })],
  [
    'created_at range',
    () => {
      const [newer, older] = [history.a[1]!, history.a[4]!];
      return {
        resourceId: a,
        filter: `created_at >= "${iso(older, 'createdAt')}" AND createdAt < "${iso(newer, 'createdAt')}"`,
        want: idsWhere(history.a, (o) => time(o, 'createdAt') >= time(older, 'createdAt') && time(o, 'createdAt') < time(newer, 'createdAt')),
      };
    },
  ],
  [
    'finished_at (unset on a running one: fails the comparison)',
    () => ({
      resourceId: b,
      filter: `finished_at > "2000-01-01T00:00:00Z"`,
      want: idsWhere(history.b, (o) => o.finishedAt !== undefined),
    }),
  ],
  [
    'OR, NOT and parentheses',
    () => ({
      resourceId: a,
      filter: '(description = "Stop instance" OR description = "Start instance") AND NOT description = "Start instance"',
      want: idsWhere(history.a, (o) => o.description === 'Stop instance'),
    }),
  ],
];

describe.each([['gRPC'], ['Connect']])('over %s', (protocol) => {
  const client = () => clients.find(([name]) => name === protocol)![1];

  test('the fixture holds what the cases need', () => {
    expect(history.a.map((o) => o.description)).toEqual([
      'Start instance',
      'Stop instance',
      'Update instance',
      'Update instance',
      'Update instance',
      'Update instance',
      'Create instance',
    ]);
    expect(history.b.map((o) => [o.description, o.status?.code])).toEqual([
      ['Migrate instance', undefined],
      ['Resize instance', 9],
      ['Create instance', 0],
    ]);
  });

  test.each(CASES)('OperationService.List filters: %s', async (_name, make) => {
    const { resourceId, filter, want } = make();
    expect(want.length).toBeGreaterThan(0);
    expect((await walk(client(), { resourceId }, filter)).ids).toEqual(want);
    // Page by page (two a page, at most SCAN_ROWS rows examined each): the same operations, once each, newest first.
    const { ids, pages } = await walk(client(), { resourceId }, filter, 2n);
    expect(ids).toEqual(want);
    expect(Math.max(...pages)).toBeLessThanOrEqual(2);
  });

  test('ListOperationsByParent filters the project’s operations, newest first', async () => {
    const all = [...history.a, ...history.b].sort((x, y) => time(y, 'createdAt') - time(x, 'createdAt'));
    const { ids } = await walk(client(), { parentId: OPS }, 'description = "Create instance" OR NOT status:*', 2n);
    expect(new Set(ids)).toEqual(new Set(idsWhere(all, (o) => o.description === 'Create instance' || o.status === undefined)));
    expect(ids).toHaveLength(3);
    expect((await walk(client(), { parentId: OPS }, 'NOT status:*')).ids).toEqual(idsWhere(history.b, (o) => o.status === undefined));
    expect((await walk(client(), { parentId: OPS }, 'status.code = 9')).ids).toEqual(idsWhere(history.b, (o) => o.status?.code === 9));
  });

  test.each([
    ['a malformed filter', 'description = ', /column 15/, 'expected a value'],
    ['an unknown field', 'labels.env = prod', /unknown field "labels\.env"/, 'unknown field'],
    ['the request (stored as protobuf)', 'request:*', /unknown field "request"/, 'unknown field'],
    ['the request headers', 'request_headers:x-resetmask', /unknown field "request_headers"/, 'unknown field'],
    ['the status message', 'status.message = x', /unknown field "status\.message"/, 'unknown field'],
    ['the progress', 'progress_data:*', /unknown field "progress_data"/, 'unknown field'],
    ['a word for the code', 'status.code = failed', /is an integer/, 'integer'],
    ['a bad timestamp', 'created_at > yesterday', /is a timestamp/, 'timestamp'],
  ])('%s → INVALID_ARGUMENT naming it on the filter field, on both lists', async (_name, filter, message, violation) => {
    for (const call of [
      () => client().call(OperationService.method.list, { resourceId: a, filter }, { token: cloud.reader.token }),
      () => client().call(InstanceService.method.listOperationsByParent, { parentId: OPS, filter }, { token: cloud.reader.token }),
    ]) {
      const error = await expectGrpcError(call());
      expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
      expect(error.details).toMatch(message);
      const violations = error.serviceError?.details.case === 'badRequest' ? error.serviceError.details.value.violations : [];
      expect(violations).toEqual([expect.objectContaining({ field: 'filter', message: expect.stringContaining(violation) })]);
    }
  });

  test('a page token of one filter is refused with another', async () => {
    const { message } = await client().call(OperationService.method.list, { resourceId: a, filter: 'status:*', pageSize: 1n }, { token: cloud.reader.token });
    expect(message.nextPageToken).not.toBe('');
    const error = await expectGrpcError(
      client().call(OperationService.method.list, { resourceId: a, filter: 'NOT status:*', pageToken: message.nextPageToken }, { token: cloud.reader.token }),
    );
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
  });
});

test('a page that reaches the scan bound is short, even empty, with a token, and the walk still finds the match', async () => {
  // The only Create of A is its oldest operation, more than SCAN_ROWS operations back.
  const first = await cloud.grpc.call(
    OperationService.method.list,
    { resourceId: a, filter: 'description = "Create instance"' },
    { token: cloud.reader.token },
  );
  expect(first.message.operations).toEqual([]);
  expect(first.message.nextPageToken).not.toBe('');
  const { ids, pages } = await walk(cloud.grpc, { resourceId: a }, 'description = "Create instance"');
  expect(ids).toEqual(idsWhere(history.a, (o) => o.description === 'Create instance'));
  expect(pages.length).toBeGreaterThanOrEqual(2);
});

test('a filtered walk returns every matching operation exactly once while operations are added between its pages', async () => {
  const id = await createInstance(GROWING, 'vm-growing');
  for (let index = 0; index < 8; index++) await update(id, index % 2 === 0 ? 'match' : 'other');
  let added = 0;
  const between = async () => {
    // Each gap adds two matching operations (newer than every one the walk has left: behind its cursor).
    added++;
    await update(id, `added ${added}`);
    await update(id, `added again ${added}`);
  };
  for (const target of [{ resourceId: id }, { parentId: GROWING }]) {
    const want = idsWhere(await unfiltered(id), (o) => o.description === 'Update instance');
    const { ids } = await walk(cloud.grpc, target, 'description = "Update instance" AND status.code = 0', 2n, between);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(want);
  }
  expect(added).toBeGreaterThan(2);
});

test('a filtered list of an unknown resource is empty, without a token', async () => {
  const empty = await cloud.grpc.call(OperationService.method.list, { resourceId: 'instance-unknown', filter: 'status:*' }, { token: cloud.reader.token });
  expect(empty.message.operations).toEqual([]);
  expect(empty.message.nextPageToken).toBe('');
});

test('cfs operation list and list-operations-by-parent take --filter, and the SDK passes filter through', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cfs-operation-filter-'));
  try {
    const common = ['--server', cloud.server.url, '--token', cloud.reader.token, '--format', 'json'];
    const cfs = async (args: string[]) => {
      const result = await runCfs([...args, ...common], dir, { XDG_CONFIG_HOME: dir });
      if (result.code !== 0) throw new Error(`cfs ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
      return (JSON.parse(result.stdout) as Array<{ id: string }>).map((operation) => operation.id);
    };
    const updates = idsWhere(history.a, (o) => o.description === 'Update instance');
    expect(await cfs(['operation', 'list', '--resource-id', a, '--filter', 'description = "Update instance"'])).toEqual(updates);
    expect(await cfs(['compute', 'instance', 'list-operations-by-parent', '--parent-id', OPS, '--filter', 'NOT status:*'])).toEqual(
      idsWhere(history.b, (o) => o.status === undefined),
    );
    const malformed = await runCfs(['operation', 'list', '--resource-id', a, '--filter', 'status.code =', ...common], dir, { XDG_CONFIG_HOME: dir });
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toContain('column 14');

    const sdk = createCloudSdk({
      baseUrl: cloud.server.url,
      transport: (options) => createConnectTransport({ ...options, httpVersion: '1.1' }),
      credentials: { token: cloud.reader.token },
    });
    const iterated: string[] = [];
    for await (const operation of sdk.client(OperationService).list({ resourceId: a, filter: 'description = "Update instance"', pageSize: 1n }))
      iterated.push(operation.id);
    expect(iterated).toEqual(updates);
    sdk.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
