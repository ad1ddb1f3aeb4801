/**
 * `npm run bench:webhooks`: 1 KB JSON POSTs to a webhook route through the real server (PGlite in a
 * temporary data directory by default, PostgreSQL when DATABASE_URL is set), against a raw node:http
 * server answering the same requests without storing them, in one run. The server is pinned to core 0
 * and wrk to core 1. Afterwards the server is stopped gracefully and the stored captures are counted
 * straight from the database: every 2xx answer must have its row (none lost); a few more rows than
 * answers are allowed (requests in flight when wrk stopped were stored but their answers not counted).
 * Targets (exit code 1 when one is missed): on PGlite at least 8000 captures/s (issue #13), on
 * PostgreSQL at least 5000; none lost. BENCH_PROFILE_DIR writes the server's CPU profile there.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/store/database.js';
import { scratchDatabase } from '../scripts/support/fresh-store.js';
import { buildServer, compiledServerArgs } from './compiled-server.js';
import { processCpuMs } from './process-cpu.js';

const ROOT = new URL('../', import.meta.url).pathname;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;

if (!existsSync('/usr/bin/wrk')) {
  console.error('bench:webhooks needs wrk: apt-get install -y wrk');
  process.exit(2);
}

const scratch = mkdtempSync(join(tmpdir(), 'bench-webhooks-'));
const buildDir = buildServer();
const payload = JSON.stringify({ event: 'bench', data: 'x'.repeat(1024 - 30) }).slice(0, 1024);
const body = payload.length < 1024 ? payload.replace('"}', `${'y'.repeat(1024 - payload.length)}"}`) : payload;
const script = join(scratch, 'post.lua');
writeFileSync(
  script,
  `wrk.method = "POST"\nwrk.body = ${JSON.stringify(body)}\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["X-Bench"] = "1"\n`,
);

const adminUrl = process.env.DATABASE_URL;
const TARGET = adminUrl ? 5000 : 8000;
const database = adminUrl ? await scratchDatabase(adminUrl, 'bench_webhooks') : undefined;
const databaseUrl = database?.url;
const dataDir = join(scratch, 'data');
const children: ChildProcess[] = [];
try {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent',
    PORT: '0',
    DATA_DIR: dataDir,
    // Keep every capture so the stored count can be compared with the answers.
    WEBHOOK_MAX_REQUESTS: '10000000',
  };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  else delete env.DATABASE_URL;

  // The baseline runs before and after the capture run; the ratio uses the higher figure (this
  // machine's throughput drifts during a session, and a conservative ratio is the useful one).
  const measureBaseline = async (when: string) => {
    const raw = await startChild(['--import', 'tsx', 'bench/raw-webhook-server.ts'], env);
    wrk(raw.port, '/', 2);
    const result = wrk(raw.port, '/', SECONDS, raw.child.pid);
    await stopChild(raw.child);
    console.log(`[raw node:http, ${when}] ${result.rps.toFixed(0)} req/s, p99 ${result.p99}, ${result.cpuUs.toFixed(0)} µs CPU per request`);
    return result;
  };
  const baselineBefore = await measureBaseline('before');

  const profile = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  const full = await startChild([...profile, ...compiledServerArgs(buildDir)], env);
  const created = await fetch(`http://127.0.0.1:${full.port}/routes`, { method: 'POST' });
  const { routeId } = (await created.json()) as { routeId: string };
  const warm = wrk(full.port, `/${routeId}`, 2);
  console.log(`[capture, warm-up 2 s] ${warm.rps.toFixed(0)} req/s`);
  const capture = wrk(full.port, `/${routeId}`, SECONDS, full.child.pid);
  console.log(
    `[capture, ${SECONDS} s] ${capture.rps.toFixed(0)} req/s, p50 ${capture.p50}, p99 ${capture.p99}, ${capture.cpuUs.toFixed(0)} µs CPU per request`,
  );
  // Graceful stop: the capture writer flushes, so what was acknowledged must be in the store now.
  await stopChild(full.child);

  const baselineAfter = await measureBaseline('after');
  const baseline = baselineBefore.rps >= baselineAfter.rps ? baselineBefore : baselineAfter;

  const db = await openDatabase(databaseUrl ? { databaseUrl } : { dataDir });
  const [row] = (await db.knex('webhook_requests').where({ route_id: routeId }).count({ count: '*' })) as Array<{ count: number | string }>;
  await db.close();
  const stored = Number(row?.count ?? 0);
  const acknowledged = warm.ok + capture.ok;
  const lost = Math.max(0, acknowledged - stored);

  const store = databaseUrl ? 'PostgreSQL' : 'PGlite';
  console.log(`webhook capture, 1 KB JSON POST, ${CONNECTIONS} connections, ${SECONDS} s, store ${store}`);
  console.log(
    `  raw node:http (no storage)   ${baseline.rps.toFixed(0).padStart(7)} req/s   (before ${baselineBefore.rps.toFixed(0)}, after ${baselineAfter.rps.toFixed(0)})`,
  );
  console.log(
    `  capture (stored, acked)      ${capture.rps.toFixed(0).padStart(7)} req/s   ratio ${(capture.rps / baseline.rps).toFixed(2)}   target ${TARGET} req/s`,
  );
  console.log(`  latency p50 ${capture.p50}  p99 ${capture.p99}`);
  // Less moved by other work on the machine than throughput: the server's own CPU per request.
  const rawCpuUs = Math.min(baselineBefore.cpuUs, baselineAfter.cpuUs);
  console.log(
    `  server CPU per request: raw ${rawCpuUs.toFixed(0)} µs, capture ${capture.cpuUs.toFixed(0)} µs, raw/capture ${(rawCpuUs / capture.cpuUs).toFixed(2)}`,
  );
  console.log(`  2xx answers ${acknowledged}, non-2xx ${warm.non2xx + capture.non2xx}, rows stored ${stored}, lost ${lost}`);
  if (lost > 0 || stored > acknowledged + 2 * CONNECTIONS || warm.non2xx + capture.non2xx > 0) {
    console.error('FAIL: stored captures do not match the acknowledged requests');
    process.exitCode = 1;
  }
  if (capture.rps < TARGET) {
    console.error(`FAIL: capture ${capture.rps.toFixed(0)} req/s is below the ${TARGET} req/s target (${store})`);
    process.exitCode = 1;
  } else if (process.exitCode !== 1) {
    console.log(`OK: capture meets the ${TARGET} req/s target, none lost`);
  }
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await database?.drop();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(buildDir, { recursive: true, force: true });
}

interface WrkResult {
  rps: number;
  /** The server's CPU time (user + system) per request of the run, in µs (NaN without a pid). */
  cpuUs: number;
  ok: number;
  non2xx: number;
  p50: string;
  p99: string;
}

function wrk(port: number, path: string, seconds: number, pid?: number): WrkResult {
  const cpuBefore = pid === undefined ? NaN : processCpuMs(pid);
  const output = execFileSync(
    'taskset',
    ['-c', '1', 'wrk', '-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency', '-s', script, `http://127.0.0.1:${port}${path}`],
    { encoding: 'utf8' },
  );
  const total = Number(/(\d+) requests in/.exec(output)?.[1] ?? 0);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0);
  const errors = /Socket errors: (.*)/.exec(output)?.[1];
  if (errors) console.warn(`  wrk socket errors: ${errors}`);
  const cpuMs = pid === undefined ? NaN : processCpuMs(pid) - cpuBefore;
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? 0),
    cpuUs: (cpuMs * 1000) / Math.max(1, total),
    ok: total - non2xx,
    non2xx,
    // Anchored: a thread-statistics column such as `88.50%` must not be read as the median.
    p50: /^\s*50%\s+(\S+)/m.exec(output)?.[1] ?? '?',
    p99: /^\s*99%\s+(\S+)/m.exec(output)?.[1] ?? '?',
  };
}

function startChild(args: string[], env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn('taskset', ['-c', '0', process.execPath, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening (\d+)/.exec(output);
      if (match) resolve({ child, port: Number(match[1]) });
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
