import { jest } from '@jest/globals';
import { once } from 'node:events';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { scratchDatabase, type ScratchDatabase } from '../../scripts/support/fresh-store.js';
import { buildServer, spawnServer, watch, type CompiledServer } from './compiled-server.js';
import { budget } from '../support/budget.js';

/**
 * WORKERS=N (src/server/cluster.ts) through the compiled server: the PGlite refusal, and on
 * PostgreSQL (only when DATABASE_URL is set) two workers serving one port, one /metrics for both, a
 * dead worker replaced, and SIGTERM to the primary ending everything gracefully with exit 0.
 */
jest.setTimeout(budget(40_000));
let server: CompiledServer;
beforeAll(async () => {
  server = await buildServer();
});
afterAll(() => server?.remove());

interface LogLine {
  pid?: number;
  msg?: string;
  route?: string;
}
const logLines = (output: string): LogLine[] =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);

/** A GET on a connection of its own (no keep-alive): the primary hands each new connection to the next worker. */
function getOnNewConnection(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent: false }, (response) => {
      response.resume();
      response.once('end', () => resolve(response.statusCode ?? 0));
    }).once('error', reject);
  });
}

/** The body of a GET on a connection of its own. */
function getBodyOnNewConnection(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.once('end', () => (response.statusCode === 200 ? resolve(body) : reject(new Error(`${path} answered ${response.statusCode}: ${body}`))));
    }).once('error', reject);
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it('PGlite refuses WORKERS=2 with one line naming WORKERS and DATABASE_URL, exit 1', async () => {
  const child = spawnServer(server.main, { WORKERS: '2', DATA_DIR: 'memory://' });
  const { errors, exited } = watch(child);
  expect(await exited).toBe(1);
  expect(errors().trim().split('\n')).toEqual([
    'cannot start: WORKERS=2 needs DATABASE_URL: the embedded PGlite store (DATA_DIR) belongs to one process; set DATABASE_URL=postgres://… or WORKERS=1',
  ]);
});

const onPostgres = process.env.DATABASE_URL ? describe : describe.skip;
onPostgres('WORKERS=2 on PostgreSQL', () => {
  const adminUrl = process.env.DATABASE_URL ?? '';
  // An empty database, not the migrated template: the primary migrates it once, before forking.
  let database: ScratchDatabase;
  beforeAll(async () => {
    database = await scratchDatabase(adminUrl, 'test_workers');
  });
  afterAll(() => database?.drop());

  it('serves one port from two workers, replaces a worker that dies, and on SIGTERM turns every worker not ready, serves through SHUTDOWN_DELAY_MS and exits 0', async () => {
    const url = new URL(database.url);
    const grace = 3000;
    const delay = 3000;
    const child = spawnServer(server.main, {
      WORKERS: '2',
      DATABASE_URL: url.toString(),
      SHUTDOWN_GRACE_MS: String(grace),
      SHUTDOWN_DELAY_MS: String(delay),
    });
    const { output, errors, listening, exited } = watch(child);
    try {
      const port = await listening;
      const listeners = async (count: number): Promise<number[]> => {
        while (logLines(output()).filter((line) => line.msg === 'listening').length < count) await once(child.stdout, 'data');
        return logLines(output())
          .filter((line) => line.msg === 'listening')
          .map((line) => line.pid ?? 0);
      };
      const workers = await listeners(2);
      expect(new Set(workers).size).toBe(2);
      expect(workers).not.toContain(child.pid);

      // The users API answers: the store was migrated (by the primary; workers start with MIGRATE=false).
      expect(await getOnNewConnection(port, '/api')).toBe(200);
      const statuses = await Promise.all(Array.from({ length: 8 }, () => getOnNewConnection(port, '/healthz')));
      expect(statuses.every((status) => status === 200)).toBe(true);
      while (logLines(output()).filter((line) => line.route !== undefined).length < 9) await once(child.stdout, 'data');
      const servedBy = new Set(logLines(output()).flatMap((line) => (line.route !== undefined && line.pid !== undefined ? [line.pid] : [])));
      expect([...servedBy].sort()).toEqual([...workers].sort());

      // /metrics answers for the whole cluster whichever worker takes the scrape: each worker served
      // only part of the 8 /healthz requests, every scrape counts all of them.
      for (let scrape = 0; scrape < 2; scrape++) {
        const text = await getBodyOnNewConnection(port, '/metrics');
        const healthz = [...text.matchAll(/^cfs_requests_total\{[^}]*operation="GET \/healthz"[^}]*\} (\d+)$/gm)].reduce(
          (sum, match) => sum + Number(match[1]),
          0,
        );
        expect(healthz).toBeGreaterThanOrEqual(8);
      }

      // A worker killed outright is replaced by a new one on the same port.
      process.kill(workers[0] ?? 0, 'SIGKILL');
      const [, , replacement] = await listeners(3);
      expect(workers).not.toContain(replacement);
      expect(await getOnNewConnection(port, '/healthz')).toBe(200);
      expect(await getOnNewConnection(port, '/healthz')).toBe(200);

      const stopped = Date.now();
      child.kill('SIGTERM');
      // The primary forwards the signal: both workers answer 503 (new connections alternate between
      // them), and keep serving everything else through the delay.
      let notReady = 0;
      while (notReady < 2) notReady = (await getOnNewConnection(port, '/readyz')) === 503 ? notReady + 1 : 0;
      // (After the delay the listener is closed: this connection would be refused.)
      expect(await getOnNewConnection(port, '/api')).toBe(200);
      expect(await exited).toBe(0);
      expect(Date.now() - stopped).toBeGreaterThanOrEqual(delay);
      expect(Date.now() - stopped).toBeLessThan(delay + grace + 5000);
      expect([workers[1], replacement].filter((pid) => pid !== undefined && alive(pid))).toEqual([]);
      expect(errors()).toBe('');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('when no worker can start (PORT taken), the primary stops instead of restarting them, exit 1', async () => {
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const address = taken.address();
    if (typeof address !== 'object' || address === null) throw new Error('no port');
    const url = new URL(database.url);
    try {
      const child = spawnServer(server.main, { WORKERS: '2', DATABASE_URL: url.toString(), PORT: String(address.port) });
      const { errors, exited } = watch(child);
      expect(await exited).toBe(1);
      // Each worker that got as far as binding says why, in the single-process words.
      expect(errors()).toMatch(new RegExp(`^cannot start: PORT ${address.port}`, 'm'));
    } finally {
      taken.close();
    }
  });
});
