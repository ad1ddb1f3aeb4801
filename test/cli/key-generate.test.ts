/**
 * `cfs iam key generate` never leaves a key on the server whose private half was lost: a file that
 * exists (without --force) or a path that cannot be written fails before the server is asked, and
 * --force replaces the file.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type TestServer } from '../support/app.js';
import { budget } from '../support/budget.js';
import { runCfs } from '../support/cfs.js';

const ADMIN = { name: 'keygen-admin', password: 'keygen-admin-password' };

let server: TestServer | undefined;
let dir: string;
let env: Record<string, string>;
let project: string;
let account: string;

function cfs(args: string[]): ReturnType<typeof runCfs> {
  return runCfs(args, dir, env);
}

/** The ids of the service account's keys, as the server lists them. */
async function keys(): Promise<string[]> {
  const listed = await cfs(['iam', 'auth-public-key', 'list', '--parent-id', project, '--format', 'json']);
  expect(listed).toMatchObject({ code: 0 });
  const items = JSON.parse(listed.stdout) as Array<{ metadata: { id: string }; spec: { serviceAccountId: string } }>;
  return items.filter((key) => key.spec.serviceAccountId === account).map((key) => key.metadata.id);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cfs-keygen-'));
  server = await startServer({ ADMIN_USERNAME: ADMIN.name, ADMIN_PASSWORD: ADMIN.password, COMPUTE_WORK_MS: '20' });
  env = { CFS_SERVER: server.url, XDG_CONFIG_HOME: join(dir, 'config') };
  const token = await cfs(['iam', 'get-access-token', '--name', ADMIN.name, '--password', ADMIN.password]);
  env.CFS_TOKEN = token.stdout.trim();
  project = JSON.parse((await cfs(['iam', 'project', 'create', '--name', 'keygen', '--format', 'json'])).stdout).resourceId;
  account = JSON.parse((await cfs(['iam', 'service-account', 'create', '--project', project, '--name', 'robot', '--format', 'json'])).stdout).resourceId;
}, budget(60_000));

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

test(
  'an existing file is kept, nothing is generated, and the error names --force',
  async () => {
    writeFileSync(join(dir, 'taken.json'), 'mine\n');
    const before = await keys();
    const refused = await cfs(['iam', 'key', 'generate', '--service-account', account, '--output', 'taken.json']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/taken\.json exists.*--force/);
    expect(readFileSync(join(dir, 'taken.json'), 'utf8')).toBe('mine\n');
    expect(await keys()).toEqual(before);

    const forced = await cfs(['iam', 'key', 'generate', '--service-account', account, '--output', 'taken.json', '--force']);
    expect(forced).toMatchObject({ code: 0, stderr: '' });
    const written = JSON.parse(readFileSync(join(dir, 'taken.json'), 'utf8'));
    expect(written).toEqual({ id: forced.stdout.trim(), service_account_id: account, private_key: expect.stringMatching(/^-----BEGIN PRIVATE KEY-----/) });
    expect(await keys()).toEqual(expect.arrayContaining([...before, written.id]));
    expect(readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  },
  budget(30_000),
);

test(
  'a path that cannot be written fails before the server makes a key',
  async () => {
    const before = await keys();
    const missing = await cfs(['iam', 'key', 'generate', '--service-account', account, '--output', join('no-such-dir', 'key.json')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no-such-dir.*nothing was generated/);
    expect(await keys()).toEqual(before);
  },
  budget(30_000),
);
