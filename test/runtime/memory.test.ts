import { jest } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/database.js';
import { pgliteTemplatePath } from '../support/template.js';
import { buildServer, spawnServer, watch } from './compiled-server.js';
import { budget } from '../support/budget.js';

/**
 * The embedded store's memory (docs/operations.md, Memory): here the settings that keep it small,
 * and the compiled server serving every API family on them. How much memory that takes is a
 * measurement, not a behaviour: `npm run bench:memory` measures it (and fails above its target);
 * resident memory depends on the Node version and the machine's load (370 MB on a busy host, 752 MB
 * once on Node 24 in CI, ~210 MB quiet), so no test asserts a bound on it.
 */
jest.setTimeout(budget(30_000));
const template = () => new Blob([readFileSync(pgliteTemplatePath())]);
const onlyPglite = process.env.DATABASE_URL ? it.skip : it;

it('PGlite runs with shared_buffers = 16MB by default, and PGLITE_SHARED_BUFFERS_MB sets it', async () => {
  for (const [given, want] of [
    [undefined, '16MB'],
    [32, '32MB'],
  ] as const) {
    const db = await openDatabase({ dataDir: 'memory://', loadDataDir: template(), ...(given === undefined ? {} : { pgliteSharedBuffersMb: given }) });
    try {
      const result = (await db.knex.raw('show shared_buffers')) as { rows: Array<{ shared_buffers: string }> };
      expect(result.rows[0]?.shared_buffers).toBe(want);
    } finally {
      await db.close();
    }
  }
});

onlyPglite('the compiled server on an existing PGlite DATA_DIR with those settings serves users, cloud, publishing and webhook requests', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cfs-memory-'));
  const dataDir = join(root, 'data');
  const server = await buildServer();
  try {
    // A migrated store, as on any restart (initdb would take seconds more and is measured by the bench).
    const seed = await openDatabase({ dataDir, loadDataDir: template() });
    await seed.close();
    const child = spawnServer(server.main, { DATA_DIR: dataDir });
    const { listening, exited } = watch(child);
    try {
      const base = `http://127.0.0.1:${await listening}`;
      const signIn = await fetch(`${base}/api/auth`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'memory-admin', password: 'memory-password' }),
      });
      expect(signIn.status).toBe(200);
      const { accessToken } = (await signIn.json()) as { accessToken: string };
      const projects = await fetch(`${base}/cloud.iam.v1.ProjectService/List`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
        body: '{}',
      });
      expect(projects.status).toBe(200);
      expect((await fetch(`${base}/v1/articles`)).status).toBe(200);
      expect((await fetch(`${base}/routes`, { method: 'POST' })).status).toBe(201);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  } finally {
    server.remove();
    rmSync(root, { recursive: true, force: true });
  }
});
