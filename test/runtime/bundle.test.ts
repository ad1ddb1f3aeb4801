import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { buildServer, spawnServer, watch, type CompiledServer } from './compiled-server.js';
import { ROOT } from '../support/template.js';
import { budget } from '../support/budget.js';

/**
 * The built entry, `dist/src/main.js`, is an ES module holding our code and every package but the
 * few that must stay files (PGlite, @node-rs/argon2, yaml), with the code it shares with the other
 * commands in chunks beside it (scripts/build.mjs, docs/architecture.md "Build, container and time to
 * ready"); the image installs only those externals. Every `import.meta.url` in it is rewritten to the
 * URL its file has in the per-file build, so whatever the server reads beside its modules (inspector
 * assets, pre-built contracts, the vendored files) is found from the bundle too: checked by serving
 * each of them from a started bundle, with the vendored files' originals removed as in the image (only
 * their gzip'd copies left).
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

/** The bundle's files: the server's entry and the chunks it shares with `migrate` and `sandbox`. */
function bundleFiles(): string[] {
  const dir = dirname(built.main);
  return ['main.js', ...readdirSync(dir).filter((name) => name.startsWith('bundle-'))].map((name) => join(dir, name));
}

test('the entry bundles our code and the packages, CommonJS ones included; only PGlite and argon2 stay imports', () => {
  const code = bundleFiles().map((file) => readFileSync(file, 'utf8'));
  const entry = readFileSync(built.main, 'utf8');
  // The only files it imports are its own chunks.
  expect(entry.match(/from\s*"\.{1,2}\/[^"]*"/g)?.every((clause) => /"\.\/bundle-chunk-[\w-]+\.js"/.test(clause))).toBe(true);
  for (const bundled of ['@bufbuild/protobuf', '@connectrpc/connect', 'jose', 'knex', 'openapi-backend', 'graphql', 'pino', 'pg', 'ajv', '@grpc/grpc-js'])
    for (const text of code) expect({ bundled, imported: new RegExp(`(from\\s*|import\\()"${bundled}"`).test(text) }).toEqual({ bundled, imported: false });
  // PGlite is an ES module, but reads its wasm beside its own file: it stays a package.
  expect(code.some((text) => /import\("@electric-sql\/pglite"\)/.test(text))).toBe(true);
  expect(code.some((text) => /from\s*"@node-rs\/argon2"/.test(text))).toBe(true);
  // What the image installs beside the bundle.
  expect(
    Object.keys((JSON.parse(readFileSync(join(dirname(built.main), '../runtime/package.json'), 'utf8')) as { dependencies: object }).dependencies),
  ).toEqual(['@electric-sql/pglite', '@node-rs/argon2', 'yaml']);
});

/** A GET with exactly these headers (fetch would add Accept-Encoding and decode the body). */
function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

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
    // As in the image (Dockerfile): the vendored files that have a gzip'd copy ship only that copy.
    const vendor = join(dirname(built.main), '../vendor');
    const original = readFileSync(join(vendor, 'swagger-ui-dist/swagger-ui-bundle.js'));
    for (const file of readdirSync(vendor, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.gz')))
      rmSync(join(vendor, file.replace(/\.gz$/, '')));
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

      // The gzip'd copy to a client that accepts gzip, decompressed for one that does not; each its own ETag.
      const assetUrl = `${base}/docs/assets/swagger-ui-bundle.js`;
      const gzipped = await rawGet(assetUrl, { 'accept-encoding': 'br, gzip;q=0.8' });
      expect([gzipped.status, gzipped.headers['content-encoding'], gzipped.headers.vary]).toEqual([200, 'gzip', 'Accept-Encoding']);
      expect(gunzipSync(gzipped.body).equals(original)).toBe(true);
      for (const acceptEncoding of [undefined, 'gzip;q=0', 'br']) {
        const plain = await rawGet(assetUrl, acceptEncoding ? { 'accept-encoding': acceptEncoding } : {});
        expect({ acceptEncoding, status: plain.status, encoding: plain.headers['content-encoding'] }).toEqual({
          acceptEncoding,
          status: 200,
          encoding: undefined,
        });
        expect(plain.body.equals(original)).toBe(true);
        expect(plain.headers.etag).not.toBe(gzipped.headers.etag);
      }
      const revalidated = await rawGet(assetUrl, { 'accept-encoding': 'gzip', 'if-none-match': String(gzipped.headers.etag) });
      expect(revalidated.status).toBe(304);

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
    // No CommonJS file came from node_modules but the externals' (knex, graphql… are in the
    // bundle; knex-pglite requires PGlite's CommonJS entry), and the bundle found the build's pre-built
    // contracts: no YAML parser was loaded.
    const loaded = JSON.parse(readFileSync(loadedFile, 'utf8')) as string[];
    expect(loaded.filter((file) => file.includes('/node_modules/') && !/\/node_modules\/(@node-rs|@electric-sql\/pglite)\//.test(file))).toEqual([]);
    expect(loaded.some((file) => file.includes('/node_modules/@node-rs/argon2/'))).toBe(true);
  },
  budget(20_000),
);
