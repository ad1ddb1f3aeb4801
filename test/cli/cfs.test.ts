/**
 * `cfs` as an operator uses it, as child processes of bin/cfs.js against the live server: profiles,
 * every verb on instances, output formats, errors and exit codes, shell completion.
 */
import { jest } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { startServer, type TestServer } from '../support/app.js';
import { budget } from '../support/budget.js';

// Each test runs dozens of `cfs` child processes (~10 s for the file quiet): the former fixed 240 s,
// scaled with the load like every other timeout (test/support/budget.ts).
jest.setTimeout(budget(80_000));

const ROOT = new URL('../../', import.meta.url).pathname;
const ADMIN = { name: 'cfs-admin', password: 'cfs-admin-password' };

let server: TestServer | undefined;
let dir: string;

beforeAll(async () => {
  server = await startServer({ ADMIN_USERNAME: ADMIN.name, ADMIN_PASSWORD: ADMIN.password, COMPUTE_WORK_MS: '20' });
  dir = mkdtempSync(join(tmpdir(), 'cfs-profiles-'));
});
afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `cfs` with its config in the test's directory; no CFS_SERVER: the profiles say where the server is. */
function cfs(args: string[], env: Record<string, string> = {}): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin/cfs.js'), ...args],
      { cwd: dir, env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: dir, ...env } },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

/** Runs `cfs` and expects it to succeed; answers its JSON output. */
async function json(args: string[], env: Record<string, string> = {}): Promise<Record<string, unknown> & { [key: string]: unknown }> {
  const result = await cfs(args, env);
  if (result.code !== 0) throw new Error(`cfs ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

test('an operator sets up profiles and works through every verb on instances', async () => {
  const url = server?.url ?? '';
  // A user profile (the token is kept, the password is not) and a service-account profile from a key file.
  expect(await cfs(['profile', 'create', 'admin', '--server', url, '--name', ADMIN.name, '--password', ADMIN.password])).toMatchObject({ code: 0 });
  const configFile = join(dir, 'cfs/config.yaml');
  expect(statSync(configFile).mode & 0o777).toBe(0o600);
  expect(readFileSync(configFile, 'utf8')).not.toContain(ADMIN.password);

  const projectId = (await json(['iam', 'project', 'create', '--name', 'ops'])).resourceId as string;
  expect(projectId).toMatch(/^project-/);
  const accountId = (await json(['iam', 'service-account', 'create', '--project', projectId, '--name', 'ops-robot'])).resourceId as string;
  expect((await cfs(['iam', 'key', 'generate', '--service-account', accountId, '--output', 'robot.json'])).code).toBe(0);
  expect(await cfs(['profile', 'create', 'robot', '--server', url, '--key-file', 'robot.json', '--project', projectId, '--use'])).toMatchObject({ code: 0 });

  const profiles = (await json(['profile', 'list'])) as unknown as Array<Record<string, unknown>>;
  expect(profiles).toEqual([
    { name: 'admin', current: false, server: url, auth: 'token', project: '' },
    { name: 'robot', current: true, server: url, auth: `key file ${join(dir, 'robot.json')}`, project: projectId },
  ]);
  // --profile and CFS_PROFILE pick another profile for one call.
  expect(await json(['iam', 'whoami'])).toMatchObject({ serviceAccountProfile: { info: { metadata: { id: accountId } } } });
  expect(await json(['iam', 'whoami', '--profile', 'admin'])).toHaveProperty('userProfile');
  expect(await json(['iam', 'whoami'], { CFS_PROFILE: 'admin' })).toHaveProperty('userProfile');

  // create: the profile's project is the parent; the command waits for the operation.
  const created = await json([
    'compute',
    'instance',
    'create',
    '--name',
    'web',
    '--description',
    'v1',
    '--labels',
    'team=ops',
    '--ssh-keys',
    'ssh-ed25519 AAAA',
    '--resources-preset',
    'small',
  ]);
  expect(created).toMatchObject({ description: 'Create instance', status: {}, finishedAt: expect.any(String) });
  const id = created.resourceId as string;

  const got = await json(['compute', 'instance', 'get', id]);
  expect(got).toMatchObject({
    metadata: { id, parentId: projectId, name: 'web', labels: { team: 'ops' } },
    spec: { description: 'v1', sshKeys: ['ssh-ed25519 AAAA'], resources: { preset: 'small' } },
  });
  expect(await json(['compute', 'instance', 'get-by-name', '--name', 'web'])).toMatchObject({ metadata: { id } });
  const listed = (await json(['compute', 'instance', 'list'])) as unknown as Array<{ metadata: { id: string } }>;
  expect(listed.map((instance) => instance.metadata.id)).toEqual([id]);

  // update: only what is given changes (the rest is read and sent back); an empty list value clears it.
  const updated = await json(['compute', 'instance', 'update', id, '--description', 'v2', '--ssh-keys', '']);
  expect(updated.requestHeaders).toMatchObject({ 'x-resetmask': { values: [expect.stringContaining('ssh_keys')] } });
  expect(await json(['compute', 'instance', 'get', id])).toMatchObject({
    metadata: { labels: { team: 'ops' } },
    spec: { description: 'v2', resources: { preset: 'small' } },
  });
  expect(((await json(['compute', 'instance', 'get', id])).spec as Record<string, unknown>).sshKeys).toBeUndefined();

  await json(['compute', 'instance', 'stop', id]);
  expect(await json(['compute', 'instance', 'get', id])).toMatchObject({ spec: { stopped: true }, status: { state: 'STATE_STOPPED' } });
  await json(['compute', 'instance', 'start', id]);
  expect(((await json(['compute', 'instance', 'get', id])).spec as Record<string, unknown>).stopped).toBeUndefined();

  const operations = (await json(['compute', 'instance', 'list-operations-by-parent', '--parent-id', projectId])) as unknown as Array<{ description: string }>;
  expect(operations.map((operation) => operation.description)).toEqual(
    expect.arrayContaining(['Create instance', 'Update instance', 'Stop instance', 'Start instance']),
  );

  // --async answers the running operation; `operation wait` finishes it.
  const deleting = await json(['compute', 'instance', 'delete', id, '--async']);
  expect(deleting.status).toBeUndefined();
  expect(await json(['operation', 'wait', deleting.id as string])).toMatchObject({ id: deleting.id, status: {} });
  expect(await json(['operation', 'get', deleting.id as string])).toMatchObject({ id: deleting.id, status: {} });

  // Errors: the ServiceError and the request id on stderr, and an exit code per kind.
  const gone = await cfs(['compute', 'instance', 'get', id]);
  expect(gone.code).toBe(4);
  expect(gone.stderr).toMatch(/^cfs: NOT_FOUND: /);
  expect(gone.stderr).toMatch(/compute\/NotFound \(retry_type NOTHING\) resourceNotFound: \{"resourceId":"instance-/);
  expect(gone.stderr).toMatch(/request id: \S+/);
  const denied = await cfs(['compute', 'instance', 'list', '--parent-id', 'project-elsewhere']);
  expect(denied.code).toBe(5);
  expect(denied.stderr).toMatch(/PERMISSION_DENIED/);
  const invalid = await cfs(['compute', 'instance', 'create']);
  expect(invalid.code).toBe(1);
  expect(invalid.stderr).toMatch(/INVALID_ARGUMENT[\s\S]*badRequest/);

  // use and delete.
  expect((await cfs(['profile', 'use', 'admin'])).code).toBe(0);
  expect((await cfs(['profile', 'delete', 'robot'])).code).toBe(0);
  expect(((await json(['profile', 'list'])) as unknown as Array<{ name: string; current: boolean }>).map(({ name, current }) => [name, current])).toEqual([
    ['admin', true],
  ]);
  expect((await cfs(['iam', 'whoami', '--profile', 'robot'])).code).toBe(2);
});

test('update replaces labels: --labels replaces the map, --remove-labels drops keys, --labels "" and a file with labels: {} clear it', async () => {
  const signIn = await server?.request('POST', '/api/auth', { body: ADMIN });
  const as = ['--server', server?.url ?? '', '--token', signIn?.body.accessToken as string];
  const projectId = (await json(['iam', 'project', 'create', '--name', 'labelled', ...as])).resourceId as string;
  const created = await json([
    'compute',
    'instance',
    'create',
    '--parent-id',
    projectId,
    '--name',
    'tagged',
    '--labels',
    'a=1',
    '--labels',
    'b=2',
    '--labels',
    'c=3',
    ...as,
  ]);
  const id = created.resourceId as string;
  const labels = async () => ((await json(['compute', 'instance', 'get', id, ...as])).metadata as { labels?: Record<string, string> }).labels ?? {};
  expect(await labels()).toEqual({ a: '1', b: '2', c: '3' });
  // Issue 30: the flags merged into the stored labels, so none could ever be removed.
  await json(['compute', 'instance', 'update', id, '--labels', 'a=10', '--labels', 'd=4', ...as]);
  expect(await labels()).toEqual({ a: '10', d: '4' });
  await json(['compute', 'instance', 'update', id, '--remove-labels', 'a', '--remove-labels', 'absent', '--description', 'kept', ...as]);
  expect(await labels()).toEqual({ d: '4' });
  await json(['compute', 'instance', 'update', id, '--labels', '', ...as]);
  expect(await labels()).toEqual({});
  await json(['compute', 'instance', 'update', id, '--labels', 'e=5', ...as]);
  writeFileSync(join(dir, 'no-labels.yaml'), 'metadata:\n  labels: {}\n');
  const cleared = await json(['compute', 'instance', 'update', id, '--file', 'no-labels.yaml', ...as]);
  expect(cleared.requestHeaders).toMatchObject({ 'x-resetmask': { values: [expect.stringContaining('labels')] } });
  expect(await labels()).toEqual({});
  expect(((await json(['compute', 'instance', 'get', id, ...as])).spec as Record<string, unknown>).description).toBe('kept');
});

test("the IAM services' verbs are generated the same way", async () => {
  const base = { CFS_SERVER: server?.url ?? '', XDG_CONFIG_HOME: join(dir, 'iam-verbs') };
  const token = (await cfs(['iam', 'get-access-token', '--name', ADMIN.name, '--password', ADMIN.password], base)).stdout.trim();
  const env = { ...base, CFS_TOKEN: token };
  const project = (await json(['iam', 'project', 'create', '--name', 'iam-verbs', '--description', 'd1'], env)).resourceId as string;
  expect(await json(['iam', 'project', 'get', project], env)).toMatchObject({ metadata: { name: 'iam-verbs' }, spec: { description: 'd1' } });
  expect(await json(['iam', 'project', 'get-by-name', '--name', 'iam-verbs'], env)).toMatchObject({ metadata: { id: project } });
  await json(['iam', 'project', 'update', project, '--description', 'd2'], env);
  expect(await json(['iam', 'project', 'get', project], env)).toMatchObject({ metadata: { name: 'iam-verbs' }, spec: { description: 'd2' } });

  const account = (await json(['iam', 'service-account', 'create', '--parent-id', project, '--name', 'verbs-robot'], env)).resourceId as string;
  const accounts = (await json(['iam', 'service-account', 'list', '--parent-id', project], env)) as unknown as Array<{ metadata: { id: string } }>;
  expect(accounts.map((item) => item.metadata.id)).toEqual([account]);
  expect(await json(['iam', 'service-account', 'get-by-name', '--parent-id', project, '--name', 'verbs-robot'], env)).toMatchObject({
    metadata: { id: account },
  });

  const keyId = (await cfs(['iam', 'key', 'generate', '--service-account', account, '--output', 'verbs-key.json'], env)).stdout.trim();
  const keys = (await json(['iam', 'auth-public-key', 'list', '--parent-id', project], env)) as unknown as Array<{ metadata: { id: string } }>;
  expect(keys.map((item) => item.metadata.id)).toEqual([keyId]);
  await json(['iam', 'auth-public-key', 'deactivate', keyId], env);
  expect(((await json(['iam', 'auth-public-key', 'get', keyId], env)).status as Record<string, unknown>).active).toBeUndefined();
  await json(['iam', 'auth-public-key', 'delete', keyId], env);
  await json(['iam', 'service-account', 'delete', account], env);
  await json(['iam', 'project', 'delete', project], env);
  expect((await cfs(['iam', 'project', 'get', project], env)).code).toBe(4);
});

test('--format prints JSON, YAML or a table', async () => {
  const env = { CFS_SERVER: server?.url ?? '', XDG_CONFIG_HOME: join(dir, 'formats') };
  const token = (await cfs(['iam', 'get-access-token', '--name', ADMIN.name, '--password', ADMIN.password], env)).stdout.trim();
  const asJson = await json(['iam', 'project', 'list', '--format', 'json', '--token', token], env);
  const asYaml = await cfs(['iam', 'project', 'list', '--format', 'yaml', '--token', token], env);
  expect(parseYaml(asYaml.stdout)).toEqual(asJson);
  const table = await cfs(['iam', 'project', 'list', '--format', 'table', '--token', token], env);
  const [header, ...rows] = table.stdout.trimEnd().split('\n');
  expect(header).toMatch(/^ID\s+NAME\s+PARENT\s+ACTIVE\s+CREATED$/);
  expect(rows.some((row) => /^project-\S+\s+default\s/.test(row))).toBe(true);
  const one = await cfs(['iam', 'whoami', '--format', 'table', '--token', token], env);
  expect(one.stdout).toMatch(/^FIELD\s+VALUE\n/);
  expect(one.stdout).toMatch(/userProfile\.\S+\s+\S/);
  expect(await cfs(['iam', 'whoami', '--format', 'xml'], env)).toMatchObject({
    code: 2,
    stderr: expect.stringMatching(/--format must be one of json, yaml, table/),
  });
});

test('without --format, a terminal gets a table and a pipe JSON', async () => {
  const env = { CFS_SERVER: server?.url ?? '', XDG_CONFIG_HOME: join(dir, 'tty') };
  const token = (await cfs(['iam', 'get-access-token', '--name', ADMIN.name, '--password', ADMIN.password], env)).stdout.trim();
  expect(JSON.parse((await cfs(['iam', 'whoami', '--token', token], env)).stdout)).toHaveProperty('userProfile');
  // script(1) gives the command a terminal for its stdout.
  const command = [process.execPath, join(ROOT, 'bin/cfs.js'), 'iam', 'whoami', '--token', token].map((word) => `'${word}'`).join(' ');
  const onTerminal = await new Promise<string>((resolve, reject) =>
    execFile('script', ['-qec', command, '/dev/null'], { cwd: dir, env: { PATH: process.env.PATH ?? '', ...env } }, (error, stdout) =>
      error ? reject(error) : resolve(stdout),
    ),
  );
  expect(onTerminal).toMatch(/^FIELD\s+VALUE\r?\n/);
});

/** A port nothing listens on (just released). */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

test('an unreachable server exits 6, after the retries', async () => {
  const nowhere = `http://127.0.0.1:${await closedPort()}`;
  const result = await cfs(['compute', 'instance', 'get', 'instance-x', '--server', nowhere, '--token', 't']);
  expect(result.code).toBe(6);
  expect(result.stderr).toMatch(/^cfs: UNAVAILABLE: /);
  // Sign-in is plain HTTP (fetch): the same exit code.
  const signIn = await cfs(['iam', 'get-access-token', '--name', 'a', '--password', 'b', '--server', nowhere]);
  expect(signIn).toMatchObject({ code: 6, stderr: expect.stringMatching(/^cfs: UNAVAILABLE: cannot reach http:\/\/127\.0\.0\.1:\d+/) });
});

test('usage errors exit 2', async () => {
  expect(await cfs(['compute', 'instance', 'create', '--bogus'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/Unknown option '--bogus'/) });
  expect(await cfs(['compute', 'instance', 'list'], { XDG_CONFIG_HOME: join(dir, 'no-profiles') })).toMatchObject({
    code: 2,
    stderr: expect.stringMatching(/token is required/),
  });
  expect(await cfs(['compute', 'instance', 'create', '--recovery-policy', 'sometimes', '--token', 't'])).toMatchObject({
    code: 2,
    stderr: expect.stringMatching(/--recovery-policy must be one of/),
  });
  expect(await cfs(['compute', 'instance'])).toMatchObject({
    code: 2,
    stdout: expect.stringMatching(/<get\|get-by-name\|list\|create\|update\|delete\|start\|stop/),
  });
  expect(await cfs(['profile', 'use', 'nobody'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/no profile "nobody"/) });
});

test('completion scripts for bash and zsh know every command and option', async () => {
  const bash = await cfs(['completion', 'bash']);
  expect(bash.code).toBe(0);
  expect(bash.stdout).toContain('complete -F _cfs cfs');
  // The script completes as bash runs it.
  const complete = (words: string[]) =>
    new Promise<string>((resolve, reject) => {
      const script = `${bash.stdout}\nCOMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _cfs; echo "\${COMPREPLY[*]}"`;
      execFile('bash', ['-c', script], (error, stdout) => (error ? reject(error) : resolve(stdout.trim())));
    });
  expect(await complete(['cfs', ''])).toEqual(expect.stringContaining('compute'));
  expect(await complete(['cfs', 'compute', 'instance', 'st'])).toBe('start stop');
  expect((await complete(['cfs', 'compute', 'instance', 'update', '--resource'])).split(' ')).toEqual([
    '--resource-version',
    '--resources-platform',
    '--resources-preset',
  ]);
  expect(await complete(['cfs', 'iam', 'project', 'list', '--format', 'y'])).toBe('yaml');
  expect(await complete(['cfs', 'profile', ''])).toBe('create delete list use');

  // Issue 30: a global option before the command broke it, and neither profile names nor enum values completed.
  const config = mkdtempSync(join(tmpdir(), 'cfs-completion-'));
  try {
    for (const name of ['beta', 'alpha']) expect((await cfs(['profile', 'create', name, '--token', 't'], { XDG_CONFIG_HOME: config })).code).toBe(0);
    const cfsFunction = `cfs() { XDG_CONFIG_HOME='${config}' '${process.execPath}' '${join(ROOT, 'bin/cfs.js')}' "$@"; }`;
    const completeWith = (words: string[]) =>
      new Promise<string>((resolve, reject) => {
        const script = `${cfsFunction}\n${bash.stdout}\nCOMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _cfs; echo "\${COMPREPLY[*]}"`;
        execFile('bash', ['-c', script], (error, stdout) => (error ? reject(error) : resolve(stdout.trim())));
      });
    expect(await completeWith(['cfs', '--profile', 'sa', 'compute', ''])).toBe('disk instance');
    expect(await completeWith(['cfs', '--profile', 'sa', 'compute', '--server', 'http://h', 'instance', 'st'])).toBe('start stop');
    expect(await completeWith(['cfs', '--format=json', 'iam', 'project', 'l'])).toBe('list');
    expect(await completeWith(['cfs', '--format', '=', 'json', 'iam', 'project', 'l'])).toBe('list');
    expect(await completeWith(['cfs', '--profile', ''])).toBe('alpha beta');
    expect(await completeWith(['cfs', 'compute', 'instance', 'list', '--profile', 'a'])).toBe('alpha');
    expect(await completeWith(['cfs', 'profile', 'use', ''])).toBe('--format --help --profile --server --token alpha beta');
    expect(await completeWith(['cfs', 'compute', 'instance', 'create', '--recovery-policy', ''])).toBe('RECOVER FAIL');
    expect(await completeWith(['cfs', '--profile', 'alpha', 'compute', 'instance', 'update', 'instance-1', '--recovery-policy', 'F'])).toBe('FAIL');
    // After a positional (an id), the command's options still complete.
    expect(await completeWith(['cfs', 'compute', 'instance', 'get', 'instance-1', '--for'])).toBe('--format');
  } finally {
    rmSync(config, { recursive: true, force: true });
  }

  const zsh = await cfs(['completion', 'zsh']);
  expect(zsh.code).toBe(0);
  expect(zsh.stdout).toMatch(/^#compdef cfs/);
  expect(zsh.stdout).toContain('"compute instance") opts="create delete get get-by-name list list-operations-by-parent start stop update"');
  expect((await cfs(['completion', 'fish'])).code).toBe(2);
});
