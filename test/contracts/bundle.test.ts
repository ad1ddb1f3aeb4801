import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { budget } from '../support/budget.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);
const rootPackage = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string>; devDependencies: Record<string, string> };
const pinned = (name: string) => `${name}@${rootPackage.dependencies[name] ?? rootPackage.devDependencies[name]}`;
// npm's own environment from the jest script would leak into the child npm (and its config warnings).
const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('npm_') && key !== 'NODE_OPTIONS'));

/** What a client team writes: types and clients of every contract kind, and misuses the compiler must refuse. */
const CONSUMER = `
import { create } from '@bufbuild/protobuf';
import { createRouterTransport } from '@connectrpc/connect';
import { createCloudClient, createUsersClient, createRestClient, type UsersComponents } from '@contract-first-server/contracts';
import type { paths } from '@contract-first-server/contracts/openapi/users.js';
import { InstanceSchema, type Instance } from '@contract-first-server/contracts/proto/cloud/compute/v1/instance_pb.js';
import type { Article } from '@contract-first-server/contracts/graphql/publishing.js';
import { createCloudSdk, parseServiceAccountKey, OperationError } from '@contract-first-server/contracts/sdk';
import { InstanceService } from '@contract-first-server/contracts/proto/cloud/compute/v1/instance_service_pb.js';

export async function useTheContracts(baseUrl: string): Promise<string[]> {
  const seen: string[] = [];
  const users = createUsersClient(baseUrl, { token: () => 'token' });
  const info = await users.get('/api');
  if (info.status === 200) seen.push(info.body.name, info.body.version);
  const user = await users.get('/api/users/{id}', { path: { id: 'u1' } });
  if (user.status === 200) {
    const dto: UsersComponents['schemas']['UserDto'] = user.body;
    const admin: boolean = dto.isAdmin;
    seen.push(String(admin));
  }
  const created = await users.post('/api/users', { body: { name: 'ada', password: 'correct horse', isAdmin: false } });
  if (created.status === 200) seen.push(created.body.id);
  // @ts-expect-error the path parameter is required
  await users.get('/api/users/{id}');
  // @ts-expect-error not a path of the API
  await users.get('/api/nope');
  // @ts-expect-error a required body property is missing
  await users.post('/api/users', { body: { name: 'ada' } });
  if (info.status === 200) {
    // @ts-expect-error the 200 body has no such property
    seen.push(info.body.nope);
  }
  const same = createRestClient<paths>(baseUrl);
  await same.get('/api');

  const cloud = createCloudClient(createRouterTransport(() => undefined));
  const server = await cloud.serverInfoService.getServerInfo({});
  seen.push(server.version);
  const instance: Instance = create(InstanceSchema, {});
  seen.push(instance.$typeName);
  const article: Pick<Article, 'title'> = { title: 'hello' };
  seen.push(article.title);

  const sdk = createCloudSdk({
    baseUrl,
    transport: ({ interceptors }) => createRouterTransport(() => undefined, { transport: { interceptors } }),
    credentials: { serviceAccountKey: parseServiceAccountKey('{"id":"k","service_account_id":"a","private_key":"p"}') },
    retry: { maxAttempts: 5, deadlineMs: 10_000 },
  });
  const instances = sdk.client(InstanceService);
  try {
    const done = await sdk.wait(await instances.create({ metadata: { parentId: 'project-1', name: 'vm' } }), { onProgress: (operation) => seen.push(operation.id) });
    seen.push(done.resourceId);
  } catch (error) {
    if (error instanceof OperationError) seen.push(error.operation.id);
  }
  for await (const each of instances.list({ parentId: 'project-1' })) {
    const typed: Instance = each;
    seen.push(typed.metadata?.name ?? '');
  }
  const page = await instances.list({ parentId: 'project-1' });
  seen.push(page.nextPageToken);
  // @ts-expect-error Get is not a List: it pages nothing
  for await (const nothing of instances.get({ id: 'x' })) seen.push(String(nothing));
  sdk.close();
  return seen;
}
`;

describe('npm run contracts:bundle', () => {
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'contracts-package-'));
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('writes a package that installs into an empty project and type-checks there', async () => {
    const out = join(scratch, 'contracts');
    await run(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts/contracts-bundle.ts'), '--out', out], { cwd: ROOT, env });
    const manifest = JSON.parse(readFileSync(join(out, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({ name: '@contract-first-server/contracts', version: rootPackage.version, license: 'MIT' });
    expect(readdirSync(out)).toEqual(expect.arrayContaining(['LICENSE', 'CHANGELOG.md']));
    for (const file of readdirSync(join(ROOT, 'contracts/openapi')).filter((name) => name.endsWith('.yaml'))) {
      const name = file.replace(/\.yaml$/, '');
      expect(readdirSync(join(out, 'openapi'))).toEqual(expect.arrayContaining([`${name}.yaml`, `${name}.json`, `${name}.d.ts`]));
      expect(readdirSync(join(out, 'clients'))).toEqual(expect.arrayContaining([`${name}.js`, `${name}.d.ts`]));
    }
    expect(readdirSync(join(out, 'proto'))).toContain('image.binpb');

    const { stdout: packed } = await run('npm', ['pack', '--pack-destination', scratch, '--silent'], { cwd: out, env });
    const tarball = join(scratch, packed.trim().split('\n').pop() ?? '');

    const project = join(scratch, 'consumer');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    const install = [tarball, pinned('@bufbuild/protobuf'), pinned('@connectrpc/connect'), pinned('typescript'), pinned('graphql'), '--no-audit', '--no-fund', '--loglevel=error'];
    // The packages are in the local npm cache (this repo installed them); go to the registry only if not.
    await run('npm', ['install', '--offline', ...install], { cwd: project, env }).catch(() => run('npm', ['install', ...install], { cwd: project, env }));

    writeFileSync(join(project, 'consumer.ts'), CONSUMER);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, types: [] }, files: ['consumer.ts'] }),
    );
    const typecheck = await run(join(project, 'node_modules/.bin/tsc'), ['-p', project], { cwd: project, env }).then(
      () => ({ ok: true, output: '' }),
      (error: { stdout?: string }) => ({ ok: false, output: error.stdout ?? '' }),
    );
    expect(typecheck).toEqual({ ok: true, output: '' });

    // The JavaScript loads too: every client factory is there at run time.
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', "const m = await import('@contract-first-server/contracts'); console.log(Object.keys(m).sort().join(','))"], { cwd: project, env });
    expect(stdout.trim().split(',')).toEqual(expect.arrayContaining(['createCloudClient', 'createRestClient', 'createUsersClient', 'cloudServices']));
    const sdk = await run(process.execPath, ['--input-type=module', '-e', "const m = await import('@contract-first-server/contracts/sdk'); console.log(Object.keys(m).sort().join(','))"], { cwd: project, env });
    expect(sdk.stdout.trim().split(',')).toEqual(expect.arrayContaining(['createCloudSdk', 'waitForOperation', 'ServiceAccountCredentials', 'isRetriable']));
  }, budget(60_000));
});
