import { execFileSync } from 'node:child_process';
import { fillFilesystem } from '../../scripts/support/fill-filesystem.js';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, type App } from '../../src/server/build.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/store/database.js';
import { pgliteTemplatePath } from '../support/template.js';

/**
 * PGlite's DATA_DIR on a small tmpfs that the test fills up (issue 21, item 3). Mounting needs root
 * (or CAP_SYS_ADMIN); where it is refused the tests are skipped with the reason.
 */
const MOUNT_SIZE = '96m';
const ADMIN = { name: 'disk-admin', password: 'disk-admin-password' };

const mountPoint = mkdtempSync(join(tmpdir(), 'disk-full-'));
const mounted = tryMount();
if (!mounted.ok) {
  rmSync(mountPoint, { recursive: true, force: true });
  console.warn(`disk-full tests skipped: cannot mount a tmpfs here (${mounted.reason})`);
}

function tryMount(): { ok: true } | { ok: false; reason: string } {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${MOUNT_SIZE}`, 'tmpfs', mountPoint], { stdio: 'pipe' });
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message.split('\n')[0]! : String(error) };
  }
}

function unmount(): void {
  try {
    execFileSync('umount', [mountPoint], { stdio: 'pipe' });
  } catch {
    // Something still holds a file there (a failed start): detach it now, freed when released.
    execFileSync('umount', ['-l', mountPoint], { stdio: 'pipe' });
  }
  rmSync(mountPoint, { recursive: true, force: true });
}

function fillUp(): string {
  return fillFilesystem(mountPoint);
}

(mounted.ok ? describe : describe.skip)('a full disk under PGlite', () => {
  let app: App | undefined;
  let url = '';

  beforeAll(async () => {
    const dataDir = join(mountPoint, 'data');
    mkdirSync(dataDir, { mode: 0o700 });
    // The migrated template, unpacked onto the small filesystem (no initdb).
    const database = await openDatabase({ dataDir, loadDataDir: new Blob([readFileSync(pgliteTemplatePath())]) });
    app = await build(loadConfig({ LOG_LEVEL: 'silent', MIGRATE: 'false', DATA_DIR: dataDir, ADMIN_USERNAME: ADMIN.name, ADMIN_PASSWORD: ADMIN.password }), {
      database,
    });
    url = `http://127.0.0.1:${await app.listen(0, '127.0.0.1')}`;
  });
  afterAll(async () => {
    try {
      await app?.close();
    } finally {
      unmount();
    }
  });

  async function post(path: string, body: unknown): Promise<{ status: number; retryAfter: string | null; body: unknown }> {
    const response = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
  }

  async function readiness(): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${url}/readyz`);
    return { status: response.status, body: await response.json() };
  }

  test('a sign-in with the right password answers 503 with Retry-After (never 500, never without its throttle), a capture 503 with Retry-After 30, /readyz reports the store; all recover once space is freed', async () => {
    // Nothing has written to limit_counters or webhook_requests yet (not even /readyz's probe): the
    // first write to each must extend its file, which a full disk refuses (a write into a page with
    // room would not fail). The route is inserted directly, so route creation counts nothing.
    const routeId = randomUUID();
    await app!.db.knex('webhook_routes').insert({ id: routeId, expires_at: new Date(Date.now() + 3_600_000) });
    const filler = fillUp();
    try {
      const signIn = await post('/api/auth', ADMIN);
      expect(signIn).toMatchObject({ status: 503, body: { statusCode: 503, error: 'Service Unavailable' } });
      expect(signIn.retryAfter).toBe('30');
      const writerLogin = await post('/v1/writers/login', { email: 'nobody@example.com', password: 'whatever-password' });
      expect(writerLogin).toMatchObject({ status: 503, body: { status: 503 } });
      expect(writerLogin.retryAfter).toBe('30');
      expect(await readiness()).toEqual({ status: 503, body: expect.objectContaining({ status: 'not ready', database: 'ok', storage: 'full' }) });
      const capture = await post(`/${routeId}`, { disk: 'full' });
      expect(capture).toMatchObject({ status: 503, retryAfter: '30', body: { status: 503 } });
    } finally {
      rmSync(filler);
    }
    expect(await readiness()).toEqual({ status: 200, body: expect.objectContaining({ status: 'ready', storage: 'ok' }) });
    expect((await post('/api/auth', ADMIN)).status).toBe(200);
    expect((await post(`/${routeId}`, { disk: 'freed' })).status).toBe(200);
  });
});
