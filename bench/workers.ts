/**
 * `npm run bench:workers`: REST throughput of GET /api/users/{id} (routing, contract validation,
 * bearer auth, service, PostgreSQL) from the compiled server with WORKERS=2 against WORKERS=1, on
 * this machine. Both servers run at once on one scratch database (DATABASE_URL's server, or
 * postgres://postgres@127.0.0.1:5432/postgres) and are measured alternately with wrk; the medians
 * and their ratio are printed. Nothing is pinned: two workers need both cores, which they share with
 * wrk and PostgreSQL, as a one-machine deployment would. BENCH_SECONDS (5), BENCH_ROUNDS (5),
 * BENCH_CONNECTIONS (32); BENCH_MAIN runs another build.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDatabase } from '../scripts/support/fresh-store.js';
import { ADMIN_URL, CONNECTIONS, median, prepareUser, requireWrk, ROUNDS, SECONDS, wrk } from './users-read.js';

const ROOT = new URL('../', import.meta.url).pathname;
const MAIN = process.env.BENCH_MAIN ?? join(ROOT, 'dist/src/main.js');
requireWrk('bench:workers');
if (!existsSync(MAIN)) {
  console.error(`bench:workers runs the compiled server (${MAIN}): npm run build first`);
  process.exit(2);
}

const database = await scratchDatabase(ADMIN_URL, 'bench_workers');
const children: ChildProcess[] = [];
try {
  // LOG_LEVEL info, the default: a request line per request, as deployed (the log is drained, unread).
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'info', PORT: '0', HOST: '127.0.0.1' };
  delete env.NODE_OPTIONS;
  // One at a time: the first start migrates the scratch database.
  const one = await startServer(env, 1);
  const two = await startServer(env, 2);
  const { token, userId } = await prepareUser(one);
  const path = `/api/users/${userId}`;
  for (const port of [one, two]) await check(port, path, token);
  // Warm-up: every worker's JIT and pool (two workers each see half of the warm-up requests).
  wrk(one, path, token, 5);
  wrk(two, path, token, 10);
  const oneRuns: number[] = [];
  const twoRuns: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    oneRuns.push(wrk(one, path, token, SECONDS));
    twoRuns.push(wrk(two, path, token, SECONDS));
  }
  const [oneMedian, twoMedian] = [median(oneRuns), median(twoRuns)];
  const runs = (values: number[]) => values.map((value) => value.toFixed(0)).join(', ');
  console.log(`WORKERS=1  ${oneMedian.toFixed(0).padStart(7)} req/s   (runs: ${runs(oneRuns)})`);
  console.log(`WORKERS=2  ${twoMedian.toFixed(0).padStart(7)} req/s   (runs: ${runs(twoRuns)})`);
  console.log(
    `ratio 2/1  ${(twoMedian / oneMedian).toFixed(2)}   (medians of ${ROUNDS} alternating runs of ${SECONDS} s, ${CONNECTIONS} connections, load average ${loadAverage()})`,
  );
} finally {
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)))));
  await database.drop();
}

/** Starts the compiled server with `workers` processes; answers its port once every worker listens. */
async function startServer(env: NodeJS.ProcessEnv, workers: number): Promise<number> {
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: { ...env, WORKERS: String(workers) }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const ports = [...output.matchAll(/"port":(\d+)[^\n]*"msg":"listening"/g)].map((match) => Number(match[1]));
      if (ports.length >= workers) {
        // From here on the request log is only drained: parsing it would cost the benchmark itself.
        output = '';
        child.stdout!.removeAllListeners('data');
        child.stdout!.resume();
        resolve(ports[0] ?? 0);
      }
    });
    child.once('exit', (code) => reject(new Error(`WORKERS=${workers} exited with ${code}`)));
  });
}

async function check(port: number, path: string, token: string): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${token}` } });
  if (response.status !== 200) throw new Error(`${path} on ${port} answered ${response.status}`);
}

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}
