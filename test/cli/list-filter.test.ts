/**
 * `--filter` on `cfs … list` and `filter` through the SDK's list helpers (docs/cloud-api.md, "List
 * filters"), against the live server.
 */
import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnectTransport } from '@connectrpc/connect-node';
import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { createCloudSdk } from '../../src/sdk/index.js';
import { startServer, type TestServer } from '../support/app.js';
import { budget } from '../support/budget.js';
import { runCfs, type CfsResult } from '../support/cfs.js';

jest.setTimeout(budget(60_000));

const ADMIN = { name: 'filter-admin', password: 'filter-admin-password' };

let server: TestServer | undefined;
let dir: string;

beforeAll(async () => {
  server = await startServer({ ADMIN_USERNAME: ADMIN.name, ADMIN_PASSWORD: ADMIN.password, COMPUTE_WORK_MS: '20' });
  dir = mkdtempSync(join(tmpdir(), 'cfs-filter-'));
});
afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function cfs(args: string[]): Promise<CfsResult> {
  return runCfs(args, dir, { XDG_CONFIG_HOME: dir });
}

async function json(args: string[]): Promise<unknown> {
  const result = await cfs([...args, '--format', 'json']);
  if (result.code !== 0) throw new Error(`cfs ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as unknown;
}

const names = (items: unknown) => (items as Array<{ metadata: { name: string } }>).map((item) => item.metadata.name);

test('every cfs list takes --filter, and the SDK list helpers pass filter through', async () => {
  const url = server?.url ?? '';
  expect((await cfs(['profile', 'create', 'admin', '--server', url, '--name', ADMIN.name, '--password', ADMIN.password])).code).toBe(0);
  const projectId = ((await json(['iam', 'project', 'create', '--name', 'filtered', '--labels', 'tier=gold'])) as { resourceId: string }).resourceId;
  await json(['iam', 'project', 'create', '--name', 'plain']);
  for (const [name, env] of [
    ['web', 'prod'],
    ['db', 'prod'],
    ['scratch', 'dev'],
  ]) {
    await json(['compute', 'instance', 'create', '--project', projectId, '--name', name!, '--labels', `env=${env}`]);
  }
  await json([
    'compute',
    'instance',
    'stop',
    ((await json(['compute', 'instance', 'get-by-name', '--project', projectId, '--name', 'db'])) as { metadata: { id: string } }).metadata.id,
  ]);

  expect(names(await json(['compute', 'instance', 'list', '--project', projectId, '--filter', 'labels.env = prod']))).toEqual(['web', 'db']);
  expect(names(await json(['compute', 'instance', 'list', '--project', projectId, '--filter', 'labels.env = prod AND status.state = STATE_RUNNING']))).toEqual([
    'web',
  ]);
  expect(names(await json(['iam', 'project', 'list', '--filter', 'labels.tier = gold']))).toEqual(['filtered']);
  const accountId = (
    (await json(['iam', 'service-account', 'create', '--project', projectId, '--name', 'robot', '--labels', 'kind=robot'])) as { resourceId: string }
  ).resourceId;
  await json(['iam', 'service-account', 'create', '--project', projectId, '--name', 'other']);
  expect(names(await json(['iam', 'service-account', 'list', '--project', projectId, '--filter', 'labels:kind']))).toEqual(['robot']);
  expect((await cfs(['iam', 'key', 'generate', '--service-account', accountId, '--output', 'robot.json'])).code).toBe(0);
  const keys = (await json([
    'iam',
    'auth-public-key',
    'list',
    '--parent-id',
    projectId,
    '--filter',
    `spec.service_account_id = "${accountId}" AND status.active = true`,
  ])) as unknown[];
  expect(keys).toHaveLength(1);

  // A malformed filter is the server's INVALID_ARGUMENT, printed with its column.
  const malformed = await cfs(['compute', 'instance', 'list', '--project', projectId, '--filter', 'labels.env =']);
  expect(malformed.code).toBe(1);
  expect(malformed.stderr).toMatch(/INVALID_ARGUMENT|invalid_argument|InvalidArgument/i);
  expect(malformed.stderr).toContain('column 13');

  const signIn = await server!.request('POST', '/api/auth', { body: ADMIN });
  const sdk = createCloudSdk({
    baseUrl: url,
    transport: (options) => createConnectTransport({ ...options, httpVersion: '1.1' }),
    credentials: { token: signIn.body.accessToken as string },
  });
  const instances = sdk.client(InstanceService);
  const iterated: string[] = [];
  for await (const instance of instances.list({ parentId: projectId, filter: 'NOT labels.env = prod', pageSize: 1n }))
    iterated.push(instance.metadata?.name ?? '');
  expect(iterated).toEqual(['scratch']);
  expect((await instances.list({ parentId: projectId, filter: 'labels.env = prod', pageSize: 1n })).items.map((item) => item.metadata?.name)).toEqual(['web']);
});
