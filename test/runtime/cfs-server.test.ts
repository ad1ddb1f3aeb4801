import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type DatabaseOptions } from '../../src/store/database.js';
import { migrationSource } from '../../src/store/migrations/index.js';
import { freshStore, scratchDatabase } from '../../scripts/support/fresh-store.js';
import { budget } from '../support/budget.js';
import { pgliteTemplatePath } from '../support/template.js';
import { buildServer, spawnServer, watch, type CompiledServer } from './compiled-server.js';

/**
 * The package's `cfs-server` bin over a fresh build (bin/cfs-server.js → dist/): `migrate` and its
 * lock, unknown commands, and the start's schema check with MIGRATE=false (behind: not ready until
 * migrated; ahead: serving).
 */
jest.setTimeout(budget(60_000));
const onPostgres = process.env.DATABASE_URL ? test : test.skip;
const ALL = await migrationSource.getMigrations([]);
const LAST = ALL.at(-1) as string;

let server: CompiledServer;
beforeAll(async () => {
  server = await buildServer();
}, budget(30_000));
afterAll(() => server?.remove());

/** Runs `cfs-server <args>` to its end. */
function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [server.bin, ...args], { env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** Resolves with the first match of `pattern` in the child's stdout; rejects if it exits first. */
function logged(child: ReturnType<typeof spawnServer>, output: ReturnType<typeof watch>, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const match = pattern.exec(output.output());
      if (match) resolve(match);
    };
    child.stdout.on('data', check);
    check();
    void output.exited.then((code) => reject(new Error(`exited with ${code}: ${output.errors()}`)));
  });
}

/** A migrated store (the test template) with `change` applied to it: its server env and cleanup. */
async function migratedStore(
  change: (open: () => ReturnType<typeof openDatabase>) => Promise<void>,
): Promise<{ env: Record<string, string>; remove(): Promise<void> }> {
  const url = process.env.DATABASE_URL;
  let env: Record<string, string>;
  let remove: () => Promise<void>;
  let options: DatabaseOptions;
  if (url) {
    const scratch = await scratchDatabase(url, 'schema', process.env.TEST_TEMPLATE_DB);
    env = { DATABASE_URL: scratch.url };
    remove = scratch.drop;
    options = { databaseUrl: scratch.url, poolMax: 1 };
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'cfs-schema-'));
    env = { DATA_DIR: join(dir, 'data') };
    remove = async () => rmSync(dir, { recursive: true, force: true });
    options = { dataDir: env.DATA_DIR };
    const seeded = await openDatabase({ dataDir: env.DATA_DIR, loadDataDir: new Blob([readFileSync(pgliteTemplatePath())]) });
    await seeded.close();
  }
  await change(() => openDatabase(options));
  return { env, remove };
}

/** The last migration of this code undone: a release rolled out before its migrations ran. */
async function withoutLastMigration(open: () => ReturnType<typeof openDatabase>): Promise<void> {
  const db = await open();
  try {
    await db.knex.migrate.down({ migrationSource });
  } finally {
    await db.close();
  }
}

test('`cfs-server migrate` migrates a fresh store, exits 0, and again finds nothing to do', async () => {
  const store = await freshStore('bin');
  try {
    const first = await run(['migrate'], store.env);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toContain(LAST);
    const second = await run(['migrate'], store.env);
    expect(second).toMatchObject({ code: 0, stderr: '' });
    expect(second.stdout).toMatch(/already up to date/);
  } finally {
    await store.remove();
  }
});

test('an unknown command prints the usage on stderr and exits 2; a bad setting exits 2 with one line naming it', async () => {
  const unknown = await run(['serve-forever'], {});
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toMatch(/unknown command "serve-forever"/);
  expect(unknown.stderr).toMatch(/usage: cfs-server \[command\][^]*\bstart\b[^]*\bmigrate\b[^]*\bsandbox\b/);
  const badSetting = await run(['migrate'], { DATABASE_URL: 'mysql://nope' });
  expect(badSetting).toMatchObject({ code: 2, stdout: '' });
  expect(badSetting.stderr.trim().split('\n')).toEqual(['configuration error: DATABASE_URL must be a postgres:// URL']);
});

onPostgres('four `cfs-server migrate` processes at once on an empty PostgreSQL database all exit 0 and run each migration once (PostgreSQL only)', async () => {
  const scratch = await scratchDatabase(process.env.DATABASE_URL as string, 'binrace');
  try {
    const results = await Promise.all([1, 2, 3, 4].map(() => run(['migrate'], { DATABASE_URL: scratch.url })));
    expect(results.map((result) => result.code)).toEqual([0, 0, 0, 0]);
    expect(results.filter((result) => result.stdout.includes('already up to date'))).toHaveLength(3);
    const db = await openDatabase({ databaseUrl: scratch.url, poolMax: 1 });
    try {
      const rows = await db.knex('knex_migrations').select('name');
      expect(rows.map((row: { name: string }) => row.name).sort()).toEqual(ALL);
    } finally {
      await db.close();
    }
  } finally {
    await scratch.drop();
  }
});

test('MIGRATE=false on a schema missing its last migration: /healthz 200, /readyz 503 naming it, APIs 503, and (PostgreSQL) ready once `cfs-server migrate` ran', async () => {
  const store = await migratedStore(withoutLastMigration);
  const child = spawnServer(server.bin, { ...store.env, MIGRATE: 'false' }, ['start']);
  const output = watch(child);
  try {
    const port = Number((await logged(child, output, /"port":(\d+)[^\n]*"msg":"listening, not ready: waiting for migrations/))[1]);
    const url = `http://127.0.0.1:${port}`;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const readiness = await fetch(`${url}/readyz`);
    expect(readiness.status).toBe(503);
    expect(await readiness.json()).toMatchObject({ status: 'not ready', missingMigrations: [LAST], schema: expect.stringContaining(LAST) });
    const api = await fetch(`${url}/api/users`);
    expect(api.status).toBe(503);
    expect(api.headers.get('retry-after')).toBe('2');
    expect(await api.json()).toMatchObject({ statusCode: 503, error: 'Service Unavailable' });
    const connect = await fetch(`${url}/cloud.compute.v1.InstanceService/GetInstance`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(connect.status).toBe(503);
    expect(await connect.json()).toMatchObject({ code: 'unavailable' });
    if (process.env.DATABASE_URL) {
      expect(await run(['migrate'], store.env)).toMatchObject({ code: 0 });
      // The server looks again every 2 s, builds, and says `listening` on the same port.
      expect(await output.listening).toBe(port);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      expect((await fetch(`${url}/api/users`)).status).toBe(401);
    }
    // SIGTERM ends it (while waiting, or serving) with exit 0.
    child.kill('SIGTERM');
    expect(await output.exited).toBe(0);
  } finally {
    child.kill('SIGKILL');
    await store.remove();
  }
});

test('a schema ahead of the code (a newer release migrated) is served on, with one warning naming the unknown migration', async () => {
  const store = await migratedStore(async (open) => {
    const db = await open();
    try {
      await db.knex('knex_migrations').insert({ name: '29991231000000_from_a_newer_release', batch: 99, migration_time: new Date() });
    } finally {
      await db.close();
    }
  });
  // MIGRATE left on: knex's own check would call this "migration directory is corrupt" and refuse to start.
  const child = spawnServer(server.bin, store.env);
  const output = watch(child);
  try {
    const port = await output.listening;
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    const warnings = output
      .output()
      .split('\n')
      .filter((line) => line.includes('29991231000000_from_a_newer_release'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0] as string)).toMatchObject({ level: 40, unknownMigrations: ['29991231000000_from_a_newer_release'] });
    child.kill('SIGTERM');
    expect(await output.exited).toBe(0);
  } finally {
    child.kill('SIGKILL');
    await store.remove();
  }
});
