import { status as GrpcStatus } from '@grpc/grpc-js';
import { createConnectTransport } from '@connectrpc/connect-node';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import type { Instance } from '../../../generated/proto/cloud/compute/v1/instance_pb.js';
import { ProjectService } from '../../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { ServiceAccountService } from '../../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { AuthPublicKeyService } from '../../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { seedProjects } from '../../support/projects.js';
import { ConnectTestClient, expectGrpcError, type RpcTestClient } from '../../support/grpc.js';
import { startCloudServer, waitForOperation, type CloudServer } from './fixtures.js';

/*
 * Filtered Lists of every cloud resource over gRPC and Connect (docs/cloud-api.md, "List filters").
 * The server examines at most SCAN_ROWS rows per filtered page, so most walks below also cross
 * short pages: every assertion is on a whole walk, which must find every match exactly once.
 */

const SCAN_ROWS = 5;
const FILTERS = 'project-filters';
const GROWING = 'project-filtersgrowing';
const NEEDLE = 'project-filtersneedle';

let cloud: CloudServer;
let clients: Array<[string, RpcTestClient]>;
let instances: Instance[];

function envOf(index: number): string {
  return index % 3 === 0 ? 'prod' : 'dev';
}

async function createInstance(parentId: string, name: string, labels: Record<string, string>, spec: Record<string, unknown> = {}): Promise<string> {
  const { message } = await cloud.grpc.call(InstanceService.method.create, { metadata: { parentId, name, labels }, spec }, { token: cloud.admin.token });
  return message.id;
}

beforeAll(async () => {
  cloud = await startCloudServer({ LIST_FILTER_SCAN_ROWS: String(SCAN_ROWS) });
  await seedProjects(cloud.server.app.db.knex, [FILTERS, GROWING, NEEDLE]);
  clients = [
    ['gRPC', cloud.grpc],
    ['Connect', new ConnectTestClient(createConnectTransport({ baseUrl: cloud.server.url, httpVersion: '1.1' }))],
  ];
  const operations: string[] = [];
  for (let index = 0; index < 12; index++) {
    const labels: Record<string, string> = { env: envOf(index) };
    if (index % 4 === 0) labels.team = 'core';
    operations.push(await createInstance(FILTERS, `vm-${String(index).padStart(2, '0')}`, labels, { description: `number ${index}` }));
  }
  for (const id of operations) await waitForOperation(cloud.grpc, cloud.admin.token, id);
  const stops = [];
  for (const index of [1, 6]) {
    const { message } = await cloud.grpc.call(InstanceService.method.list, { parentId: FILTERS, pageSize: 100n }, { token: cloud.admin.token });
    const id = message.items[index]?.metadata?.id ?? '';
    stops.push((await cloud.grpc.call(InstanceService.method.stop, { id }, { token: cloud.admin.token })).message.id);
  }
  for (const id of stops) await waitForOperation(cloud.grpc, cloud.admin.token, id);
  instances = (await cloud.grpc.call(InstanceService.method.list, { parentId: FILTERS, pageSize: 100n }, { token: cloud.admin.token })).message.items;
}, 120_000);

afterAll(async () => {
  await cloud?.close();
});

/** Every page of a filtered instance list: the names in order, and the pages' sizes. */
async function walkInstances(client: RpcTestClient, parentId: string, filter: string, pageSize = 50n, between?: () => Promise<void>) {
  const names: string[] = [];
  const pages: number[] = [];
  let pageToken = '';
  for (let guard = 0; guard < 100; guard++) {
    const { message } = await client.call(InstanceService.method.list, { parentId, filter, pageSize, pageToken }, { token: cloud.reader.token });
    names.push(...message.items.map((instance) => instance.metadata?.name ?? ''));
    pages.push(message.items.length);
    if (message.nextPageToken === '') return { names, pages };
    pageToken = message.nextPageToken;
    await between?.();
  }
  throw new Error('the walk did not end');
}

function namesWhere(predicate: (instance: Instance) => boolean): string[] {
  return instances.filter(predicate).map((instance) => instance.metadata?.name ?? '');
}

const createdAt = (instance: Instance) => timestampDate(instance.metadata!.createdAt!).getTime();

const INSTANCE_CASES: Array<[string, () => { filter: string; want: string[] }]> = [
  ['labels equal', () => ({ filter: 'labels.env = "prod"', want: namesWhere((i) => i.metadata?.labels.env === 'prod') })],
  ['labels has-value with a bare word', () => ({ filter: 'labels.env:prod', want: namesWhere((i) => i.metadata?.labels.env === 'prod') })],
  ['labels has the key', () => ({ filter: 'labels:team', want: namesWhere((i) => 'team' in (i.metadata?.labels ?? {})) })],
  ['labels not equal (rows without the key included)', () => ({ filter: 'labels.team != core', want: namesWhere((i) => i.metadata?.labels.team !== 'core') })],
  ['state', () => ({ filter: 'status.state = STATE_STOPPED', want: namesWhere((i) => i.status?.state === 6) })],
  [
    'state and labels',
    () => ({
      filter: 'status.state = STATE_RUNNING AND labels.env = prod',
      want: namesWhere((i) => i.status?.state === 3 && i.metadata?.labels.env === 'prod'),
    }),
  ],
  [
    'OR',
    () => ({ filter: 'labels.env = prod OR labels:team', want: namesWhere((i) => i.metadata?.labels.env === 'prod' || 'team' in (i.metadata?.labels ?? {})) }),
  ],
  ['NOT', () => ({ filter: 'NOT labels:team', want: namesWhere((i) => !('team' in (i.metadata?.labels ?? {}))) })],
  [
    '- and parentheses',
    () => ({
      filter: '-(labels:team OR status.state = STATE_STOPPED)',
      want: namesWhere((i) => !('team' in (i.metadata?.labels ?? {})) && i.status?.state !== 6),
    }),
  ],
  [
    'created_at range',
    () => {
      const from = instances[3]!.metadata!.createdAt!;
      const to = instances[8]!.metadata!.createdAt!;
      const iso = (t: typeof from) => timestampDate(t).toISOString();
      return {
        filter: `metadata.created_at >= "${iso(from)}" AND metadata.createdAt < "${iso(to)}"`,
        want: namesWhere((i) => createdAt(i) >= timestampDate(from).getTime() && createdAt(i) < timestampDate(to).getTime()),
      };
    },
  ],
  ['name range (code point order)', () => ({ filter: 'metadata.name >= "vm-05" AND metadata.name < vm-08', want: ['vm-05', 'vm-06', 'vm-07'] })],
  ['a spec field (no index: bounded scan)', () => ({ filter: 'spec.description = "number 7"', want: ['vm-07'] })],
  ['a bool', () => ({ filter: 'spec.stopped = false AND labels.env = dev', want: namesWhere((i) => !i.spec?.stopped && i.metadata?.labels.env === 'dev') })],
];

describe.each([['gRPC'], ['Connect']])('over %s', (protocol) => {
  const client = () => clients.find(([name]) => name === protocol)![1];

  test.each(INSTANCE_CASES)('ListInstances filters: %s', async (_name, make) => {
    const { filter, want } = make();
    expect(want.length).toBeGreaterThan(0);
    const { names } = await walkInstances(client(), FILTERS, filter);
    expect(names).toEqual(want);
  });

  test('every page of a filtered walk holds at most page_size instances, and small pages find every match once', async () => {
    const want = namesWhere((i) => i.metadata?.labels.env === 'dev');
    const { names, pages } = await walkInstances(client(), FILTERS, 'labels.env = dev', 2n);
    expect(names).toEqual(want);
    expect(Math.max(...pages)).toBeLessThanOrEqual(2);
  });

  test.each([
    ['a malformed filter', 'labels.env = ', /column 14/, 'expected a value'],
    ['an unclosed parenthesis', '(labels:team', /column 1\b/, 'unclosed'],
    ['an unknown field', 'metadata.colour = red', /unknown field "metadata\.colour"/, 'unknown field'],
    ['a secret field', 'spec.cloud_init_user_data = x', /unknown field/, 'unknown field'],
    ['a string for a number field', 'spec.restart_priority = high', /is an integer/, 'integer'],
    ['an unknown enum value', 'status.state = RUNNING', /is an enum/, 'STATE_RUNNING'],
  ])('%s → INVALID_ARGUMENT naming it on the filter field', async (_name, filter, message, violation) => {
    const error = await expectGrpcError(client().call(InstanceService.method.list, { parentId: FILTERS, filter }, { token: cloud.reader.token }));
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(error.details).toMatch(message);
    expect(error.serviceError?.details.case).toBe('badRequest');
    const violations = error.serviceError?.details.case === 'badRequest' ? error.serviceError.details.value.violations : [];
    expect(violations).toEqual([expect.objectContaining({ field: 'filter', message: expect.stringContaining(violation) })]);
  });

  test("a page token of one filter is refused with another (its position means another walk's)", async () => {
    const { message } = await client().call(
      InstanceService.method.list,
      { parentId: FILTERS, filter: 'labels.env = dev', pageSize: 1n },
      { token: cloud.reader.token },
    );
    expect(message.nextPageToken).not.toBe('');
    const error = await expectGrpcError(
      client().call(
        InstanceService.method.list,
        { parentId: FILTERS, filter: 'labels.env = prod', pageToken: message.nextPageToken },
        { token: cloud.reader.token },
      ),
    );
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
  });
});

test('a filtered walk returns every matching instance exactly once while instances are inserted between its pages', async () => {
  for (let index = 0; index < 8; index++) await createInstance(GROWING, `old-${index}`, { env: index % 2 === 0 ? 'prod' : 'dev' });
  let added = 0;
  const { names } = await walkInstances(cloud.grpc, GROWING, 'labels.env = prod AND NOT labels:skip', 2n, async () => {
    // Each gap adds a match, a non-match and a match that carries `skip`.
    added++;
    await createInstance(GROWING, `new-${added}-a`, { env: 'prod' });
    await createInstance(GROWING, `new-${added}-b`, { env: 'dev' });
    await createInstance(GROWING, `new-${added}-c`, { env: 'prod', skip: 'yes' });
  });
  expect(new Set(names).size).toBe(names.length);
  expect(names.filter((name) => name.startsWith('old-'))).toEqual(['old-0', 'old-2', 'old-4', 'old-6']);
  // Rows inserted behind the cursor are never seen; those ahead of it are, once each.
  expect(names.every((name) => name.startsWith('old-') || /^new-\d+-a$/.test(name))).toBe(true);
  expect(added).toBeGreaterThan(1);
});

test('a page that reaches the scan bound is short, even empty, with a token, and the walk still finds every match', async () => {
  for (let index = 0; index < 3 * SCAN_ROWS; index++) {
    await createInstance(NEEDLE, `hay-${String(index).padStart(2, '0')}`, {}, { description: index === 2 * SCAN_ROWS + 1 ? 'needle' : 'hay' });
  }
  const first = await cloud.grpc.call(InstanceService.method.list, { parentId: NEEDLE, filter: 'spec.description = needle' }, { token: cloud.reader.token });
  expect(first.message.items).toEqual([]);
  expect(first.message.nextPageToken).not.toBe('');
  const { names, pages } = await walkInstances(cloud.grpc, NEEDLE, 'spec.description = needle');
  expect(names).toEqual([`hay-${2 * SCAN_ROWS + 1}`]);
  expect(pages.length).toBeGreaterThanOrEqual(3);
});

describe.each([['gRPC'], ['Connect']])('IAM Lists over %s', (protocol) => {
  const client = () => clients.find(([name]) => name === protocol)![1];
  let projectIds: string[];
  let accountIds: string[];
  let keyIds: string[];

  beforeAll(async () => {
    const token = cloud.admin.token;
    const suffix = protocol.toLowerCase();
    projectIds = [];
    for (const [name, tier] of [
      [`gold-${suffix}`, 'gold'],
      [`bronze-${suffix}`, 'bronze'],
    ] as const) {
      const { message } = await cloud.grpc.call(ProjectService.method.create, { metadata: { name, labels: { tier, suite: `filters-${suffix}` } } }, { token });
      projectIds.push(message.resourceId);
    }
    const parentId = projectIds[0]!;
    accountIds = [];
    for (const name of ['robot', 'human']) {
      const { message } = await cloud.grpc.call(
        ServiceAccountService.method.create,
        { metadata: { parentId, name, labels: name === 'robot' ? { kind: 'robot' } : {} } },
        { token },
      );
      accountIds.push(message.resourceId);
    }
    keyIds = [];
    for (const serviceAccountId of [accountIds[0]!, accountIds[0]!, accountIds[1]!]) {
      const { message } = await cloud.grpc.call(AuthPublicKeyService.method.generate, { spec: { serviceAccountId } }, { token });
      keyIds.push(message.key?.metadata?.id ?? '');
    }
    await cloud.grpc.call(AuthPublicKeyService.method.deactivate, { id: keyIds[1]! }, { token });
  });

  test('ListProjects filters on labels', async () => {
    const { message } = await client().call(
      ProjectService.method.list,
      { filter: `labels.suite = "filters-${protocol.toLowerCase()}" AND labels.tier = gold` },
      { token: cloud.reader.token },
    );
    expect(message.items.map((project) => project.metadata?.id)).toEqual([projectIds[0]]);
  });

  test('ListServiceAccounts filters on labels and status', async () => {
    const parentId = projectIds[0]!;
    const robots = await client().call(ServiceAccountService.method.list, { parentId, filter: 'labels:kind' }, { token: cloud.reader.token });
    expect(robots.message.items.map((account) => account.metadata?.id)).toEqual([accountIds[0]]);
    const active = await client().call(ServiceAccountService.method.list, { parentId, filter: 'status.active = true' }, { token: cloud.reader.token });
    expect(active.message.items.map((account) => account.metadata?.id)).toEqual(accountIds);
  });

  test('ListAuthPublicKeys filters on the account (old and new spelling) and status', async () => {
    const parentId = projectIds[0]!;
    const list = async (filter: string) =>
      (await client().call(AuthPublicKeyService.method.list, { parentId, filter }, { token: cloud.reader.token })).message.items.map((key) => key.metadata?.id);
    expect(await list(`service_account_id = "${accountIds[0]}"`)).toEqual([keyIds[0], keyIds[1]]);
    expect(await list(`spec.service_account_id = "${accountIds[0]}" AND status.active = true`)).toEqual([keyIds[0]]);
    expect(await list('status.active = false')).toEqual([keyIds[1]]);
    const error = await expectGrpcError(client().call(AuthPublicKeyService.method.list, { parentId, filter: 'active = true' }, { token: cloud.reader.token }));
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(error.details).toMatch(/unknown field "active" at column 1/);
  });
});
