import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { AppError } from '../../src/errors.js';
import { encodeStatus, Operations } from '../../src/engines/operations/index.js';
import { toRpcStatus } from '../../src/handlers/cloud/errors.js';
import { startServer, type TestServer } from '../support/app.js';
import { GrpcTestClient } from '../support/grpc.js';
import { budget } from '../support/budget.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const ADMIN = { name: 'cli-admin', password: 'cli-admin-password' };

let server: TestServer;
let dir: string;

beforeAll(async () => {
  server = await startServer({ ADMIN_USERNAME: ADMIN.name, ADMIN_PASSWORD: ADMIN.password, COMPUTE_WORK_MS: '20' });
  dir = mkdtempSync(join(tmpdir(), 'cfs-cli-'));
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `cfs` as a child process, as a user would (bin/cfs.js), against the live server. */
function cfs(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin/cfs.js'), ...args],
      { cwd: dir, env: { PATH: process.env.PATH ?? '', CFS_SERVER: server.url, ...env } },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

test(
  'the whole service-account flow works from the command line, over gRPC and HTTP',
  async () => {
    const signIn = await cfs(['iam', 'get-access-token', '--name', ADMIN.name, '--password', ADMIN.password]);
    expect(signIn).toMatchObject({ code: 0, stderr: '' });
    const admin = signIn.stdout.trim();
    expect(admin.split('.')).toHaveLength(3);

    const project = await cfs(['iam', 'project', 'create', '--name', 'cli-project'], { CFS_TOKEN: admin });
    expect(project.code).toBe(0);
    const projectId = JSON.parse(project.stdout).resourceId as string;
    expect(projectId).toMatch(/^project-/);
    const list = await cfs(['iam', 'project', 'list'], { CFS_TOKEN: admin });
    expect(list.stdout).toMatch(/ default\n/);
    expect(list.stdout).toContain(`${projectId} cli-project`);

    const account = await cfs(['iam', 'service-account', 'create', '--project', projectId, '--name', 'robot', '--token', admin]);
    expect(account.code).toBe(0);
    const created = JSON.parse(account.stdout);
    expect(created).toMatchObject({ description: 'Create service account', status: {} });
    const accountId = created.resourceId as string;

    const generated = await cfs(['iam', 'key', 'generate', '--service-account', accountId, '--output', 'key.json'], { CFS_TOKEN: admin });
    expect(generated.code).toBe(0);
    const keyFile = JSON.parse(readFileSync(join(dir, 'key.json'), 'utf8'));
    expect(keyFile).toEqual({ id: generated.stdout.trim(), service_account_id: accountId, private_key: expect.stringMatching(/^-----BEGIN PRIVATE KEY-----/) });
    expect(statSync(join(dir, 'key.json')).mode & 0o777).toBe(0o600);
    expect(generated.stdout).not.toContain('PRIVATE');
    const again = await cfs(['iam', 'key', 'generate', '--service-account', accountId, '--output', 'key.json'], { CFS_TOKEN: admin });
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/key\.json exists: nothing was generated \(pass --force to overwrite it\)/);
    expect(JSON.parse(readFileSync(join(dir, 'key.json'), 'utf8')).private_key).toBe(keyFile.private_key);

    const overGrpc = await cfs(['iam', 'exchange', '--key', 'key.json']);
    expect(overGrpc).toMatchObject({ code: 0, stderr: '' });
    const overHttp = await cfs(['iam', 'exchange', '--key', 'key.json', '--http']);
    expect(overHttp).toMatchObject({ code: 0, stderr: '' });
    const token = overGrpc.stdout.trim();
    const whoami = await cfs(['iam', 'whoami'], { CFS_TOKEN: overHttp.stdout.trim() });
    expect(JSON.parse(whoami.stdout)).toMatchObject({
      serviceAccountProfile: { info: { metadata: { id: accountId, parentId: projectId, name: 'robot' }, status: { active: true } } },
    });
    expect(JSON.parse((await cfs(['iam', 'whoami'])).stdout)).toEqual({ anonymousProfile: {} });

    const grpc = new GrpcTestClient(server.url);
    try {
      const { message: operation } = await grpc.call(InstanceService.method.create, { metadata: { parentId: projectId, name: 'cli-vm' } }, { token });
      const waited = await cfs(['operation', 'wait', operation.id], { CFS_TOKEN: token });
      expect(waited.code).toBe(0);
      expect(JSON.parse(waited.stdout)).toMatchObject({ id: operation.id, resourceId: operation.resourceId, status: {}, finishedAt: expect.any(String) });
      const refused = await grpc
        .call(InstanceService.method.create, { metadata: { parentId: 'project-elsewhere', name: 'x' } }, { token })
        .catch((error: Error) => error);
      expect(String(refused)).toMatch(/PERMISSION_DENIED/);
    } finally {
      grpc.close();
    }
  },
  budget(20_000),
);

test('operation wait prints a failed operation and exits 1', async () => {
  const operations = new Operations(server.app.db.knex);
  const failed = await operations.begin(server.app.db.knex, {
    service: 'compute',
    description: 'Create instance',
    createdBy: 'useraccount-test',
    resourceId: 'instance-failed',
    parentId: '',
    request: new Uint8Array(),
    status: encodeStatus(
      toRpcStatus(
        new AppError('resource_exhausted', 'no capacity left', { detail: { kind: 'quota_failure', quota: 'compute.instances.count', limit: 1, requested: 2 } }),
        { service: 'compute', requestId: 'r' },
      ),
    ),
  });
  const admin = (await cfs(['iam', 'get-access-token', '--name', ADMIN.name, '--password', ADMIN.password])).stdout.trim();
  const waited = await cfs(['operation', 'wait', failed.id, '--token', admin]);
  expect(waited.code).toBe(1);
  expect(JSON.parse(waited.stdout).status).toMatchObject({ code: 8, message: 'no capacity left' });
});

const HELP: Array<[string, { given: string[]; want: RegExp }]> = [
  ['cfs', { given: ['--help'], want: /^Usage: cfs <command>/ }],
  ['get-access-token', { given: ['iam', 'get-access-token', '--help'], want: /--name NAME --password PASSWORD/ }],
  ['whoami', { given: ['iam', 'whoami', '--help'], want: /ProfileService.Get/ }],
  ['project create', { given: ['iam', 'project', 'create', '--help'], want: /--name NAME/ }],
  ['project list', { given: ['iam', 'project', 'list', '--help'], want: /projects the caller may see/ }],
  ['service-account create', { given: ['iam', 'service-account', 'create', '--help'], want: /--project PROJECT_ID --name NAME/ }],
  ['key generate', { given: ['iam', 'key', 'generate', '--help'], want: /--service-account ID --output key.json/ }],
  ['exchange', { given: ['iam', 'exchange', '--help'], want: /--key key.json \[--http\]/ }],
  ['operation wait', { given: ['operation', 'wait', '--help'], want: /cfs operation wait <operation-id>/ }],
];

test.each(HELP)('--help explains %s', async (_name, { given, want }) => {
  const result = await cfs(given);
  expect(result.code).toBe(0);
  expect(result.stdout).toMatch(want);
});

const USAGE: Array<[string, { given: string[]; want: RegExp }]> = [
  ['an unknown command', { given: ['iam', 'frobnicate'], want: /unknown command/ }],
  ['an unknown option', { given: ['iam', 'exchange', '--nope'], want: /Unknown option/ }],
  ['a missing token', { given: ['iam', 'service-account', 'create', '--project', 'p', '--name', 'n'], want: /token is required/ }],
  ['a missing key file', { given: ['iam', 'exchange', '--key', 'missing.json'], want: /cannot read the key file/ }],
  ['a missing operation id', { given: ['operation', 'wait', '--token', 't'], want: /operation id is required/ }],
];

test.each(USAGE)('%s is a usage error (exit 2)', async (_name, { given, want }) => {
  const result = await cfs(given);
  expect(result.code).toBe(2);
  expect(result.stderr).toMatch(want);
});
