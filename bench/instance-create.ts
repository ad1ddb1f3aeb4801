/**
 * `node --import tsx bench/instance-create.ts`: the latency of InstanceService.Create with
 * X-Idempotency-Key through the whole stack (Connect protocol over HTTP/1.1, in process), one request
 * at a time, against a scratch PostgreSQL database (CREATE_DB_NAME, dropped at the end) on
 * DATABASE_URL's server. Prints p50/p90/p99/max over CREATE_REQUESTS (400) creates after a warm-up,
 * spread over CREATE_PROJECTS (20) projects; the operation worker runs beside them as in production
 * (COMPUTE_WORK_MS 50). A measurement, not a timed test: figures are in docs/performance.md.
 */
import { randomBytes } from 'node:crypto';
import { build } from '../src/server/build.js';
import { loadConfig } from '../src/config.js';
import type { Knex } from 'knex';
import { adminQuery } from '../scripts/support/fresh-store.js';

const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const NAME = process.env.CREATE_DB_NAME ?? `cfs_bench_create_${randomBytes(4).toString('hex')}`;
const REQUESTS = Number(process.env.CREATE_REQUESTS ?? 400);
const PROJECTS = Number(process.env.CREATE_PROJECTS ?? 20);
const WARMUP = 20;

const url = new URL(ADMIN_URL);
url.pathname = `/${NAME}`;
await adminQuery(ADMIN_URL, `CREATE DATABASE ${NAME}`);
const env = {
  ...process.env,
  DATABASE_URL: url.toString(),
  LOG_LEVEL: 'silent',
  COMPUTE_WORK_MS: process.env.COMPUTE_WORK_MS ?? '50',
  ADMIN_USERNAME: 'bench-admin',
  ADMIN_PASSWORD: 'bench-password',
};
const app = await build(loadConfig(env));
try {
  const port = await app.listen(0, '127.0.0.1');
  const base = `http://127.0.0.1:${port}`;
  const auth = await fetch(`${base}/api/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench-admin', password: 'bench-password' }),
  });
  const { accessToken } = (await auth.json()) as { accessToken: string };
  const call = async (method: string, message: unknown, key?: string): Promise<{ id?: string; resourceId?: string }> => {
    const response = await fetch(`${base}/${method}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${accessToken}`,
        ...(key === undefined ? {} : { 'x-idempotency-key': key }),
      },
      body: JSON.stringify(message),
    });
    const body = (await response.json()) as { id?: string; resourceId?: string };
    if (response.status !== 200 || !body.id) throw new Error(`${method}: ${response.status} ${JSON.stringify(body)}`);
    return body;
  };
  const projects: string[] = [];
  for (let index = 0; index < PROJECTS; index++) {
    projects.push((await call('cloud.iam.v1.ProjectService/Create', { metadata: { name: `bench-${index}` } })).resourceId ?? '');
  }
  const create = async (index: number): Promise<number> => {
    const started = performance.now();
    await call(
      'cloud.compute.v1.InstanceService/Create',
      { metadata: { parentId: projects[index % PROJECTS], name: `vm-${index}` }, spec: { description: 'bench' } },
      `bench-create-${index}-${randomBytes(6).toString('hex')}`,
    );
    return performance.now() - started;
  };
  for (let index = 0; index < WARMUP; index++) await create(index);
  const times: number[] = [];
  const statements = traceStatements(app.db.knex);
  for (let index = WARMUP; index < WARMUP + REQUESTS; index++) times.push(await create(index));
  statements.stop();
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(1);
  if (process.env.CREATE_TRACE === '1') statements.print(REQUESTS);
  console.log(`Instance.Create x${REQUESTS}: p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`);
} finally {
  await app.close();
  await adminQuery(ADMIN_URL, `DROP DATABASE IF EXISTS ${NAME} WITH (FORCE)`);
}

/** With CREATE_TRACE=1: every statement the server ran during the loop (request path and worker), by SQL, with its time. */
function traceStatements(knex: Knex) {
  const started = new Map<string, number>();
  const bySql = new Map<string, number[]>();
  const onQuery = (query: { __knexQueryUid: string }) => started.set(query.__knexQueryUid, performance.now());
  const onResponse = (_response: unknown, query: { __knexQueryUid: string; sql: string }) => {
    const begun = started.get(query.__knexQueryUid);
    if (begun === undefined) return;
    started.delete(query.__knexQueryUid);
    const sql = query.sql.replace(/\s+/g, ' ').slice(0, 90);
    bySql.set(sql, [...(bySql.get(sql) ?? []), performance.now() - begun]);
  };
  knex.on('query', onQuery);
  knex.on('query-response', onResponse);
  return {
    stop() {
      knex.off('query', onQuery);
      knex.off('query-response', onResponse);
    },
    print(requests: number) {
      for (const [sql, times] of [...bySql].sort((a, b) => b[1].reduce((x, y) => x + y, 0) - a[1].reduce((x, y) => x + y, 0))) {
        times.sort((a, b) => a - b);
        const mean = times.reduce((x, y) => x + y, 0) / times.length;
        const p99 = times[Math.floor(0.99 * (times.length - 1))] ?? 0;
        console.log(
          `${(times.length / requests).toFixed(2).padStart(6)}/req  mean ${mean.toFixed(2).padStart(6)} ms  p99 ${p99.toFixed(1).padStart(6)} ms  ${sql}`,
        );
      }
    },
  };
}
