import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Code, ConnectError, createClient, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import type { DescService } from '@bufbuild/protobuf';
import { ServiceErrorSchema } from '../../generated/proto/cloud/common/v1/error_pb.js';
import { OperationService } from '../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { ServerInfoService } from '../../generated/proto/cloud/common/v1/server_info_service_pb.js';
import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { AuthPublicKeyService } from '../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { ProfileService } from '../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { ProjectService } from '../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { ServiceAccountService } from '../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { TokenExchangeService } from '../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import { ROOT } from '../../src/server/paths.js';
import { budget } from '../support/budget.js';

/**
 * Issue 32 item 1, as a client team meets it: `npm pack` of this checkout, installed into an empty
 * folder from the tarball (its dependencies from the registry), no DATABASE_URL, and
 * `npx cfs-server sandbox`. The flows below are the documented subset (docs/contracts.md, Sandbox)
 * of the users, publishing, webhooks and cloud integration tests, run against that process.
 */
const run = promisify(execFile);

/** The seeded state the sandbox writes (`sandbox.json`, printed at start). */
interface Seeded {
  url: string;
  admin: { name: string; password: string; token: string };
  superuser: { email: string; token: string };
  users: Array<{ name: string; password: string; id: string }>;
  writer: { email: string; password: string; id: string; token: string };
  topicId: string;
  articleIds: string[];
  routeId: string;
  projectId: string;
  instanceIds: string[];
  serviceAccountId: string;
  keyFile: string;
}

let folder: string | undefined;
/** The sandbox's kept seed (cache.ts): its own, so the first start seeds through the APIs. */
const cacheDir = mkdtempSync(join(tmpdir(), 'cfs-sandbox-cache-'));
let server: ChildProcess | undefined;
let seeded: Seeded;
let readyLine = '';

/**
 * How this machine reaches the npm registry (a proxy, its CA): a client team's shell has it too. Without it
 * npm run by another Node than the machine's own (CI's Node 24) misses the global npmrc's cafile.
 */
const REGISTRY_ACCESS = /^(NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|https?_proxy|no_proxy|npm_config_(registry|cafile|proxy|https_proxy|strict_ssl))$/i;

/** The child's environment: PATH, HOME and registry access only (no DATABASE_URL, no profile of this machine). */
const cleanEnv = () => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => REGISTRY_ACCESS.test(name))),
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  SANDBOX_CACHE_DIR: cacheDir,
  npm_config_cache: process.env.npm_config_cache ?? join(process.env.HOME ?? tmpdir(), '.npm'),
});

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'cfs-sandbox-install-'));
  // The build the tarball carries (prepare runs it on a real `npm pack`; here once, explicitly).
  await run(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '' } });
  const { stdout: packed } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', folder], { cwd: ROOT });
  const { filename, files } = (JSON.parse(packed) as Array<{ filename: string; files: Array<{ path: string }> }>)[0]!;
  const paths = files.map((file) => file.path);
  // What a client installs: the build, the contracts, the bins; nothing of the development checkout.
  expect(paths).toEqual(
    expect.arrayContaining([
      'bin/cfs-server.js',
      'dist/src/sandbox/main.js',
      'dist/pglite-template.tar.gz',
      'contracts/openapi/users.yaml',
      'dist/vendor/graphiql/graphiql.min.js',
      'dist/vendor/swagger-ui-dist/swagger-ui-bundle.js',
      'dist/vendor/markdown-it/index.cjs',
    ]),
  );
  expect(paths.filter((path) => /^(test|scripts|bench|src|contracts\/baseline)\//.test(path))).toEqual([]);
  await run('npm', ['init', '-y'], { cwd: folder, env: cleanEnv() });
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(folder, filename)], {
    cwd: folder,
    env: cleanEnv(),
    maxBuffer: 16 * 1024 * 1024,
  });
  // Its own process group: npx runs the bin in a child, and the whole group is stopped at the end.
  const started = await startSandbox({ detached: true });
  server = started.child;
  readyLine = started.output.split('\n')[0] ?? '';
  seeded = JSON.parse(readFileSync(started.statePath, 'utf8')) as Seeded;
}, budget(240_000));

/**
 * `npx cfs-server sandbox --port 0` in the installed folder, once its start-up lines are out: its
 * output so far and the state file it names (sandbox.json: the seeded ids and tokens).
 */
async function startSandbox(options: { detached: boolean }): Promise<{ child: ChildProcess; output: string; statePath: string }> {
  const child = spawn('npx', ['cfs-server', 'sandbox', '--port', '0'], {
    cwd: folder,
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached,
  });
  let output = '';
  const statePath = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const state = /everything seeded \(ids, tokens\)\s+(\S+)/.exec(output);
      if (state) resolve(state[1]!);
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`the sandbox exited (${code}) before it was ready:\n${output}`)));
  });
  return { child, output, statePath };
}

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server!.once('exit', resolve));
    process.kill(-server.pid!, 'SIGTERM');
    await exited;
  }
  if (folder) rmSync(folder, { recursive: true, force: true });
  rmSync(cacheDir, { recursive: true, force: true });
});

async function rest(method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${seeded.url}${path}`, {
    method,
    headers: {
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...options.headers,
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const body: any = text && /json/.test(response.headers.get('content-type') ?? '') ? JSON.parse(text) : text;
  return { status: response.status, headers: response.headers, body };
}

function client<T extends DescService>(service: T, transport: Transport = createConnectTransport({ baseUrl: seeded.url, httpVersion: '1.1' })) {
  return createClient(service, transport);
}

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

describe('the packed sandbox', () => {
  test('starts from the installed tarball, in memory, and prints its credentials', () => {
    expect(readyLine).toMatch(/^cfs-server sandbox: ready on http:\/\/127\.0\.0\.1:\d+ in [\d.]+ s/);
    process.stdout.write(`${readyLine}\n`);
    expect(readFileSync(seeded.keyFile, 'utf8')).toMatch(/"private_key":"-----BEGIN PRIVATE KEY-----/);
    // Nothing on disk beside the temporary credentials: no data directory in the client's folder.
    expect(readdirSync(folder!).sort()).toEqual(['node_modules', 'package-lock.json', 'package.json', expect.stringMatching(/\.tgz$/)].sort());
  });

  test('users: the seed lists, the example users sign in, CRUD follows the rules', async () => {
    const listed = await rest('GET', '/api/users', { token: seeded.admin.token });
    expect(listed.status).toBe(200);
    expect(listed.body.map((user: { name: string }) => user.name).sort()).toEqual(['admin', 'alice', 'bob']);
    const alice = await rest('POST', '/api/auth', { body: { name: 'alice', password: 'correct horse battery' } });
    expect(alice.status).toBe(200);
    expect(await rest('GET', '/api/users', { token: alice.body.accessToken })).toMatchObject({ status: 403 });
    const created = await rest('POST', '/api/users', {
      token: seeded.admin.token,
      body: { name: 'carol', password: 'another-passw0rd', isAdmin: false, profilePicture: '' },
    });
    expect(created.status).toBe(200);
    expect(await rest('PUT', `/api/users/${created.body.id}`, { token: seeded.admin.token, body: { onboardingDone: true } })).toMatchObject({
      status: 200,
      body: { onboardingDone: true },
    });
    expect(await rest('DELETE', `/api/users/${created.body.id}`, { token: seeded.admin.token })).toMatchObject({ status: 200 });
    expect(await rest('GET', `/api/users/${created.body.id}`, { token: seeded.admin.token })).toMatchObject({ status: 404 });
    expect(
      await rest('POST', '/api/users', { token: seeded.admin.token, body: { name: 'bob', password: 'whatever-passw0rd', isAdmin: false, profilePicture: '' } }),
    ).toMatchObject({
      status: 409,
    });
  });

  test('publishing: the seed lists (REST and GraphQL), the example writer signs in, an article goes draft → published', async () => {
    const articles = await rest('GET', '/v1/articles');
    expect(articles.body.items.map((article: { _id: string }) => article._id)).toEqual([seeded.articleIds[0]]);
    expect((await rest('GET', '/v1/topics')).body.items).toHaveLength(1);
    expect((await rest('GET', '/v1/writers', { token: seeded.superuser.token })).body.items.length).toBeGreaterThanOrEqual(2);
    const ada = await rest('POST', '/v1/writers/login', { body: { email: 'ada@example.com', password: 'correct horse battery' } });
    expect(ada.status).toBe(200);
    const draft = await rest('POST', '/v1/articles', {
      token: ada.body.accessToken,
      body: { title: 'Sandbox', text: 'Built against the sandbox.', topic: seeded.topicId },
    });
    expect(draft).toMatchObject({ status: 201, body: { status: 'draft' } });
    expect(await rest('POST', `/v1/articles/${draft.body._id}/publish`, { token: ada.body.accessToken })).toMatchObject({ status: 403 });
    expect(await rest('POST', `/v1/articles/${draft.body._id}/publish`, { token: seeded.superuser.token })).toMatchObject({
      status: 200,
      body: { status: 'published' },
    });
    const graphql = await rest('POST', '/graphql', { token: seeded.superuser.token, body: { query: '{ topics { items { title } } }' } });
    expect(graphql.status).toBe(200);
    expect(JSON.stringify(graphql.body)).toContain('Engineering');
  });

  test("the browser pages' files come from the tarball's dist/vendor: the install has no GraphiQL, React or Swagger UI package", async () => {
    for (const name of ['graphiql', '@graphiql/react', 'react-dom', 'swagger-ui-dist', 'markdown-it'])
      expect(existsSync(join(folder!, 'node_modules', name))).toBe(false);
    const vendor = join(folder!, 'node_modules/contract-first-server/dist/vendor');
    for (const [path, file] of [
      ['/docs/assets/swagger-ui-bundle.js', 'swagger-ui-dist/swagger-ui-bundle.js'],
      ['/docs/assets/swagger-ui.css', 'swagger-ui-dist/swagger-ui.css'],
      ['/graphql/explorer/graphiql.min.js', 'graphiql/graphiql.min.js'],
      ['/graphql/explorer/react-dom.production.min.js', 'react-dom/umd/react-dom.production.min.js'],
    ]) {
      const response = await rest('GET', path!);
      expect({ path, status: response.status }).toEqual({ path, status: 200 });
      expect(response.body).toBe(readFileSync(join(vendor, file!), 'utf8'));
    }
    // The publishing documentation as HTML for a browser: markdown-it, bundled into dist/vendor.
    const page = await rest('GET', '/docs/publishing.md', { headers: { accept: 'text/html' } });
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.body).toMatch(/<main>\s*<h1>Article Publishing API/);
  });

  test('webhooks: the seeded route holds its captures; a new route captures too', async () => {
    const inspected = await rest('GET', `/inspect/${seeded.routeId}`, { headers: { accept: 'application/json' } });
    expect(inspected.status).toBe(200);
    expect(inspected.body.items).toHaveLength(2);
    const route = await rest('POST', '/routes', { body: {} });
    expect(route.status).toBe(201);
    expect((await rest('POST', `/${route.body.routeId}`, { body: { hello: 'sandbox' } })).status).toBe(200);
  });

  test('cloud: the seeded project lists its instances over Connect, gRPC and gRPC-Web; the key file signs in; an instance is created', async () => {
    const connect = client(InstanceService);
    const listed = await connect.list({ parentId: seeded.projectId }, bearer(seeded.admin.token));
    expect(listed.items.map((instance) => instance.metadata?.name).sort()).toEqual(['web-0', 'web-1']);
    const grpc = client(InstanceService, createGrpcTransport({ baseUrl: seeded.url }));
    expect((await grpc.get({ id: seeded.instanceIds[0]! }, bearer(seeded.admin.token))).metadata?.id).toBe(seeded.instanceIds[0]);
    const grpcWeb = client(InstanceService, createGrpcWebTransport({ baseUrl: seeded.url, httpVersion: '1.1' }));
    expect((await grpcWeb.list({ parentId: seeded.projectId }, bearer(seeded.admin.token))).items).toHaveLength(2);
    // The key file through the installed `cfs` (the service-account flow of docs/iam.md).
    const { stdout } = await run('npx', ['cfs', 'iam', 'exchange', '--key', seeded.keyFile, '--server', seeded.url], { cwd: folder, env: cleanEnv() });
    const accountToken = stdout.trim();
    const profile = await client(ProfileService).get({}, bearer(accountToken));
    expect(profile.profile.case).toBe('serviceAccountProfile');
    const operation = await connect.create(
      { metadata: { parentId: seeded.projectId, name: 'web-2' }, spec: { resources: { platform: 'cpu-e2', preset: '4vcpu-16gb' } } },
      bearer(accountToken),
    );
    const done = await client(OperationService).wait({ id: operation.id }, bearer(accountToken));
    expect(done.finishedAt).toBeDefined();
    expect(done.status?.code ?? 0).toBe(0);
  });

  test('Prefer on an operation of every REST document: a documented code, a named example, a generated body, an undocumented code', async () => {
    const userMissing = await rest('GET', `/api/users/${seeded.users[0]!.id}`, { token: seeded.admin.token, headers: { prefer: 'code=404' } });
    expect(userMissing).toMatchObject({ status: 404, body: { statusCode: 404 } });
    expect(userMissing.headers.get('preference-applied')).toBe('code=404');
    const articleMissing = await rest('GET', `/v1/articles/${seeded.articleIds[0]}`, { headers: { prefer: 'code=404' } });
    expect(articleMissing).toMatchObject({ status: 404, body: { status: 404, title: 'Not Found' } });
    expect(articleMissing.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const routeMissing = await rest('GET', `/inspect/${seeded.routeId}`, { headers: { accept: 'application/json', prefer: 'code=404' } });
    expect(routeMissing).toMatchObject({ status: 404 });
    // The seeded route is untouched: the handler did not run.
    expect((await rest('GET', `/inspect/${seeded.routeId}`, { headers: { accept: 'application/json' } })).body.items).toHaveLength(2);
    expect(await rest('GET', '/api', { headers: { prefer: 'example=default' } })).toMatchObject({
      status: 200,
      body: { name: 'contract-first-server', version: '1.0.0' },
    });
    const dynamic = await rest('GET', '/v1/topics', { headers: { prefer: 'dynamic=true' } });
    expect(dynamic.status).toBe(200);
    expect(Array.isArray(dynamic.body.items)).toBe(true);
    const undocumented = await rest('GET', '/v1/topics', { headers: { prefer: 'code=418' } });
    expect(undocumented).toMatchObject({ status: 400, body: { errors: [{ field: 'header.prefer', message: 'code must be one of 200, 400, 401' }] } });
    expect(await rest('GET', '/api/users', { token: seeded.admin.token, headers: { prefer: 'code=418' } })).toMatchObject({
      status: 400,
      body: { details: [{ field: 'header.prefer', message: 'code must be one of 200, 400, 401, 403' }] },
    });
  });

  test('prefer on one RPC of every cloud service: that code, with its ServiceError detail', async () => {
    const prefer = (code: string) => ({ headers: { authorization: `Bearer ${seeded.admin.token}`, prefer: `code=${code}` } });
    const calls: Array<[string, () => Promise<unknown>]> = [
      ['compute', () => client(InstanceService).get({ id: seeded.instanceIds[0]! }, prefer('NOT_FOUND'))],
      ['*', () => client(OperationService).list({ resourceId: seeded.instanceIds[0]! }, prefer('NOT_FOUND'))],
      ['cpl.iam', () => client(ProjectService).get({ id: seeded.projectId }, prefer('NOT_FOUND'))],
      ['cpl.iam', () => client(ServiceAccountService).get({ id: seeded.serviceAccountId }, prefer('NOT_FOUND'))],
      ['cpl.iam', () => client(AuthPublicKeyService).list({ parentId: seeded.projectId }, prefer('NOT_FOUND'))],
      ['cpl.iam', () => client(ProfileService).get({}, prefer('NOT_FOUND'))],
      ['tokens.iam', () => client(TokenExchangeService).exchange({}, prefer('NOT_FOUND'))],
      ['system', () => client(ServerInfoService).getServerInfo({}, prefer('NOT_FOUND'))],
    ];
    for (const [service, call] of calls) {
      const error = await call().then(
        () => undefined,
        (caught: unknown) => ConnectError.from(caught),
      );
      expect(error?.code).toBe(Code.NotFound);
      const [detail] = error!.findDetails(ServiceErrorSchema);
      expect(detail).toMatchObject({ service, code: 'NotFound', details: { case: 'resourceNotFound' } });
    }
    const detail = await client(InstanceService)
      .get({ id: seeded.instanceIds[0]! }, prefer('NOT_FOUND'))
      .catch((caught: unknown) => ConnectError.from(caught).findDetails(ServiceErrorSchema)[0]);
    expect(detail).toMatchObject({ details: { case: 'resourceNotFound', value: { resourceId: seeded.instanceIds[0] } } });
    const refused = await client(InstanceService)
      .get({ id: seeded.instanceIds[0]! }, prefer('TEAPOT'))
      .catch((caught: unknown) => ConnectError.from(caught));
    expect(refused).toMatchObject({ code: Code.InvalidArgument });
    expect((refused as ConnectError).rawMessage).toMatch(/NOT_FOUND/);
    // Without `prefer` the same call runs.
    expect((await client(InstanceService).get({ id: seeded.instanceIds[0]! }, bearer(seeded.admin.token))).metadata?.id).toBe(seeded.instanceIds[0]);
  });

  test('reset (HTTP and the CLI) puts the seed back: users, articles, routes, instances', async () => {
    const dave = await rest('POST', '/api/users', {
      token: seeded.admin.token,
      body: { name: 'dave', password: 'yet-another-passw0rd', isAdmin: false, profilePicture: '' },
    });
    expect(dave.status).toBe(200);
    expect((await rest('DELETE', `/api/users/${seeded.users[0]!.id}`, { token: seeded.admin.token })).status).toBe(200);
    expect((await rest('DELETE', `/inspect/${seeded.routeId}`)).status).toBe(204);
    expect((await rest('GET', `/inspect/${seeded.routeId}`, { headers: { accept: 'application/json' } })).status).toBe(404);
    const reset = await rest('POST', '/_sandbox/reset');
    expect(reset).toMatchObject({ status: 200, body: { reset: true } });
    process.stdout.write(`sandbox reset: ${reset.body.rows} rows in ${reset.body.ms} ms\n`);
    const users = await rest('GET', '/api/users', { token: seeded.admin.token });
    expect(users.body.map((user: { name: string }) => user.name).sort()).toEqual(['admin', 'alice', 'bob']);
    expect((await rest('GET', `/inspect/${seeded.routeId}`, { headers: { accept: 'application/json' } })).body.items).toHaveLength(2);
    expect((await rest('GET', '/v1/articles')).body.items.map((article: { _id: string }) => article._id)).toEqual([seeded.articleIds[0]]);
    const instances = await client(InstanceService).list({ parentId: seeded.projectId }, bearer(seeded.admin.token));
    expect(instances.items.map((instance) => instance.metadata?.name).sort()).toEqual(['web-0', 'web-1']);
    // The seeded tokens still work, and so does the CLI's reset.
    const erin = await rest('POST', '/api/users', {
      token: seeded.admin.token,
      body: { name: 'erin', password: 'yet-another-passw0rd', isAdmin: false, profilePicture: '' },
    });
    expect(erin.status).toBe(200);
    const { stdout } = await run('npx', ['cfs-server', 'sandbox', 'reset', '--url', seeded.url], { cwd: folder, env: cleanEnv() });
    expect(stdout).toMatch(/reset to its seed \(\d+ rows\) in \d+ ms/);
    const after = await rest('GET', '/api/users', { token: seeded.admin.token });
    expect(after.body.map((user: { name: string }) => user.name).sort()).toEqual(['admin', 'alice', 'bob']);
  });
});

test(
  "killing npx (a script's `kill %1`) stops the sandbox it started: the port is freed, nothing keeps running",
  async () => {
    // Not detached: the signal goes to npx alone, as a shell's `kill %1` sends it. npx runs the bin
    // through `sh -c`; that shell dies with npx, and the sandbox is left without its parent.
    const { child, output, statePath } = await startSandbox({ detached: false });
    const { url } = JSON.parse(readFileSync(statePath, 'utf8')) as Seeded;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const npxGone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await npxGone;
    // The sandbox notices within its check interval and closes; its port then refuses connections.
    const started = performance.now();
    let refused = false;
    while (!refused && performance.now() - started < budget(15_000)) {
      refused = await fetch(`${url}/healthz`).then(
        () => false,
        () => true,
      );
      if (!refused) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect({ refused, output }).toMatchObject({ refused: true });
  },
  budget(60_000),
);
