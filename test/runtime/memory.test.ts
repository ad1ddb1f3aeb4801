import { jest } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/database.js';
import { pgliteTemplatePath } from '../support/template.js';
import { buildServer, spawnServer, watch } from './compiled-server.js';
import { budget } from '../support/budget.js';

/**
 * The embedded store's memory (docs/operations.md, Memory). The exact figure is `npm run
 * bench:memory`'s (compiled server, every API family); here, deterministic settings and one bound
 * generous enough for a loaded machine: the old default idled at ~390 MB on a restart.
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

onlyPglite('the compiled server on an existing PGlite DATA_DIR stays under 300 MB resident after serving requests', async () => {
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
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const rssMb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024;
      // ~210 MB measured; the old default (shared_buffers 128MB, TurboFan wasm) was ~390 MB here.
      expect(rssMb).toBeLessThan(300);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  } finally {
    server.remove();
    rmSync(root, { recursive: true, force: true });
  }
});
