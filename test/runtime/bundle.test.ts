import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildServer, spawnServer, watch, type CompiledServer } from './compiled-server.js';
import { ROOT } from '../support/template.js';
import { budget } from '../support/budget.js';

/**
 * The built entry, `dist/src/main.js`, is one ES module holding our code and the ES-module packages
 * (scripts/build.mjs, docs/architecture.md "Build, container and time to ready"); CommonJS packages
 * load from node_modules. Every `import.meta.url` in it is rewritten to the URL its file has in the
 * per-file build, so whatever the server reads beside its modules (inspector assets, pre-built
 * contracts, swagger-ui found through a require) is found from the bundle too: checked by serving
 * each of them from a started bundle.
 */
let built: CompiledServer;
let scratch: string;

beforeAll(async () => {
  built = await buildServer();
  scratch = mkdtempSync(join(tmpdir(), 'cfs-bundle-'));
}, budget(20_000));
afterAll(() => {
  built?.remove();
  rmSync(scratch, { recursive: true, force: true });
});

test('the entry bundles our code and the ES-module packages and imports CommonJS packages from node_modules', () => {
  const entry = readFileSync(built.main, 'utf8');
  // No import of one of our own files or of an ES-module package is left: they are inside.
  expect(entry).not.toMatch(/from\s+"\.{1,2}\//);
  for (const bundled of ['@bufbuild/protobuf', '@connectrpc/connect', '@connectrpc/connect-node', 'jose'])
    expect(entry).not.toMatch(new RegExp(`from\\s+"${bundled}"`));
  for (const external of ['knex', 'openapi-backend', 'graphql', 'pino']) expect(entry).toMatch(new RegExp(`from\\s+"${external}"`));
  // PGlite is an ES module too, but reads its wasm beside its own file: it stays a package.
  expect(entry).toMatch(/import\("@electric-sql\/pglite"\)/);
});

test(
  'the bundled server serves every family and the files it reads beside its modules',
  async () => {
    // A preload records which CommonJS files the process loaded, written when it exits.
    const loadedFile = join(scratch, 'loaded.json');
    const preload = join(scratch, 'record-loaded.cjs');
    writeFileSync(
      preload,
      `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(loadedFile)}, JSON.stringify(Object.keys(require.cache))));\n`,
    );
    const child = spawnServer(built.main, {
      DATA_DIR: join(scratch, 'data'),
      NODE_OPTIONS: `--require ${preload}`,
      SUPERUSER_EMAIL: 'root@example.com',
      SUPERUSER_PASSWORD: 'root-password',
    });
    const server = watch(child);
    try {
      const base = `http://127.0.0.1:${await server.listening}`;
      expect((await fetch(`${base}/readyz`)).status).toBe(200);

      const inspector = await fetch(`${base}/inspect-assets/inspector.js`);
      expect(inspector.status).toBe(200);
      expect(await inspector.text()).toBe(readFileSync(join(ROOT, 'src/handlers/webhook-inspector-assets/inspector.js'), 'utf8'));
      const swaggerCss = await fetch(`${base}/docs/assets/swagger-ui.css`);
      expect(swaggerCss.status).toBe(200);
      expect((await swaggerCss.text()).length).toBeGreaterThan(1000);

      // REST (users), Connect JSON (the bundled connect-node), GraphQL (graphql from node_modules).
      const signIn = await fetch(`${base}/api/auth`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'bundle-admin', password: 'bundle-password' }),
      });
      expect(signIn.status).toBe(200);
      const health = await fetch(`${base}/grpc.health.v1.Health/Check`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(await health.json()).toEqual({ status: 'SERVING' });
      const login = await fetch(`${base}/v1/writers/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'root@example.com', password: 'root-password' }),
      });
      const { accessToken } = (await login.json()) as { accessToken: string };
      const graphql = await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
        body: JSON.stringify({ query: '{ __typename me { email } }' }),
      });
      expect(await graphql.json()).toEqual({ data: { __typename: 'Query', me: { email: 'root@example.com' } } });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await server.exited).toBe(0);
    // The bundle found the build's pre-built contracts: no YAML parser was loaded.
    const loaded = JSON.parse(readFileSync(loadedFile, 'utf8')) as string[];
    expect(loaded.some((file) => file.includes('/node_modules/knex/'))).toBe(true);
    expect(loaded.some((file) => file.includes('/node_modules/yaml/'))).toBe(false);
  },
  budget(20_000),
);
