import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServerMetrics, createMetricsEndpoint } from '../../src/server/metrics.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { pgliteTemplatePath } from '../support/template.js';
import { readFileSync } from 'node:fs';
import { budget } from '../support/budget.js';

/**
 * `GET /metrics` answers what its source gives (with WORKERS > 1, the cluster's, through the primary:
 * test/runtime/workers.test.ts), and when that source fails — a worker that does not answer — the
 * scrape fails with 503 rather than answering a part that would look like counters resetting.
 */
let db: Database;
let server: Server | undefined;
beforeAll(async () => {
  db = await openDatabase({ dataDir: 'memory://', loadDataDir: new Blob([readFileSync(pgliteTemplatePath())]) });
}, budget(10_000));
afterAll(async () => {
  server?.close();
  await db?.close();
});

async function serve(collect: () => Promise<string>): Promise<string> {
  const endpoint = createMetricsEndpoint(new ServerMetrics(db), { token: undefined, public: false }, collect);
  server?.close();
  server = createServer((req, res) => void endpoint(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
}

test('a scrape answers the source’s text', async () => {
  const response = await fetch(await serve(async () => 'cfs_requests_total{protocol="http1"} 12\n'));
  expect(response.status).toBe(200);
  expect(await response.text()).toBe('cfs_requests_total{protocol="http1"} 12\n');
});

test('a source that fails makes the scrape fail with 503 in the JSON error shape', async () => {
  const response = await fetch(await serve(() => Promise.reject(new Error('cluster metrics: the primary did not answer'))));
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toBe('1');
  expect(await response.json()).toEqual({ statusCode: 503, message: 'Service Unavailable', error: 'Service Unavailable' });
});
