/**
 * `cfs operation cancel|wait` and the waiting of mutations, as child processes of bin/cfs.js against
 * a live server whose work lasts long enough to be cancelled.
 */
import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type TestServer } from '../support/app.js';
import { budget } from '../support/budget.js';
import { runCfs, type CfsResult } from '../support/cfs.js';
import { seedProjects } from '../support/projects.js';

jest.setTimeout(budget(60_000));

const ADMIN = { name: 'cfs-ops-admin', password: 'cfs-ops-admin-password' };
const PROJECT = 'project-cfsops';

let server: TestServer | undefined;
let dir: string;
let token: string;

beforeAll(async () => {
  server = await startServer({ ADMIN_USERNAME: ADMIN.name, ADMIN_PASSWORD: ADMIN.password, COMPUTE_WORK_MS: '15000' });
  await seedProjects(server.app.db.knex, [PROJECT]);
  token = (await server.request('POST', '/api/auth', { body: ADMIN })).body.accessToken as string;
  dir = mkdtempSync(join(tmpdir(), 'cfs-ops-'));
});
afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function cfs(args: string[]): Promise<CfsResult> {
  return runCfs([...args, '--format', 'json'], dir, { XDG_CONFIG_HOME: dir, CFS_SERVER: server?.url ?? '', CFS_TOKEN: token });
}

test('cfs operation wait times out (exit 3) on a running operation, cancel stops it, and wait then exits 1 with it CANCELLED', async () => {
  const started = await cfs(['compute', 'instance', 'create', '--parent-id', PROJECT, '--name', 'cli-cancelled', '--async']);
  expect(started.code).toBe(0);
  const operation = JSON.parse(started.stdout) as { id: string; resourceId: string };

  const timedOut = await cfs(['operation', 'wait', operation.id, '--timeout', '0.3']);
  expect(timedOut.code).toBe(3);
  expect(timedOut.stderr).toContain('still running');

  const cancelled = await cfs(['operation', 'cancel', operation.id]);
  expect(cancelled).toMatchObject({ code: 0 });
  expect(JSON.parse(cancelled.stdout)).toMatchObject({ id: operation.id, status: { code: 1 } });

  const waited = await cfs(['operation', 'wait', operation.id]);
  expect(waited.code).toBe(1);
  expect(JSON.parse(waited.stdout)).toMatchObject({ status: { code: 1 } });
  // Not a terminal: no progress line.
  expect(waited.stderr).not.toContain('%');

  expect((await cfs(['compute', 'instance', 'get', operation.resourceId])).code).toBe(4);
});

test('a mutation waits server-side without a progress line when piped, and a finished operation cannot be cancelled', async () => {
  const created = await cfs(['compute', 'instance', 'create', '--parent-id', PROJECT, '--name', 'cli-waited']);
  expect(created).toMatchObject({ code: 0, stderr: '' });
  const operation = JSON.parse(created.stdout) as { id: string; status?: { code?: number } };
  expect(operation.status).toEqual({});

  const refused = await cfs(['operation', 'cancel', operation.id]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/FAILED_PRECONDITION|failed_precondition/i);
  expect(refused.stderr).toContain('BadResourceState');
});
