/**
 * `npm run bench:startup`: how long the compiled server (`node dist/src/main.js`, what `npm start` and
 * the container run) takes from spawn to its first 200 from `/readyz`, on an existing PGlite data
 * directory (migrated once beforehand: the cost of a restart, not of initdb) and on PostgreSQL (a
 * scratch database on DATABASE_URL's server, or on postgres://postgres@127.0.0.1:5432/postgres when
 * that answers). Prints every run and the median; exits 1 when a median misses its target
 * (PGlite < 1 s, PostgreSQL < 0.5 s). `BENCH_RUNS` (default 5) timed runs per store; `BENCH_MAIN`
 * times another build (`node scripts/build.mjs --out /tmp/x/dist` with contracts/, node_modules and
 * package.json beside it) instead of `dist/src/main.js`, e.g. while others run the shared `dist/`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scratchDatabase } from '../scripts/support/fresh-store.js';

const ROOT = new URL('../', import.meta.url).pathname;
const MAIN = process.env.BENCH_MAIN ?? join(ROOT, 'dist/src/main.js');
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const TARGETS = { pglite: 1000, postgresql: 500 };
const GIVE_UP_MS = 60_000;

if (!existsSync(MAIN)) {
  console.error(`bench:startup runs the compiled server (${MAIN}): npm run build first`);
  process.exit(2);
}
// A build from before the OpenAPI documents were pre-built parses YAML at every start: not what ships.
if (!existsSync(join(MAIN, '../../prebuilt/openapi'))) console.log(`note: ${MAIN} has no pre-built contracts (an old build?): npm run build`);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

function readyzStatus(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const request = get({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode);
    });
    request.on('error', () => resolve(undefined));
  });
}

/** CPU time (user + system) a process has used so far, from /proc (Linux; undefined elsewhere). */
function cpuMs(pid: number | undefined): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // utime and stime are fields 14 and 15 of the whole line, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

interface Start {
  /** Wall-clock milliseconds from spawn to the first 200 from /readyz. */
  readyMs: number;
  /** CPU milliseconds the server used until then: what the start costs when the machine is busy. */
  cpuMs: number | undefined;
}

/** Starts the server, measures until /readyz first answers 200, then stops it with SIGTERM. */
async function timeToReady(env: NodeJS.ProcessEnv): Promise<Start> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [MAIN], {
    env: { ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));
  try {
    for (;;) {
      if (exitCode !== undefined) throw new Error(`the server exited with ${exitCode} before it was ready`);
      if ((await readyzStatus(port)) === 200) return { readyMs: performance.now() - started, cpuMs: cpuMs(child.pid) };
      if (performance.now() - started > GIVE_UP_MS) throw new Error(`not ready after ${GIVE_UP_MS} ms`);
      // Refused connections come back at once; a short pause keeps the poll from competing for the CPU.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    if (exitCode === undefined) child.kill('SIGTERM');
    await exited;
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

async function measure(name: keyof typeof TARGETS, env: NodeJS.ProcessEnv): Promise<boolean> {
  // The first start creates the store (initdb, migrations, keys); a restart is what is measured.
  const first = await timeToReady(env);
  const runs: Start[] = [];
  for (let run = 0; run < RUNS; run++) runs.push(await timeToReady(env));
  const result = median(runs.map((start) => start.readyMs));
  const cpu = median(runs.map((start) => start.cpuMs ?? Number.NaN));
  const ok = result < TARGETS[name];
  console.log(
    `${name.padEnd(10)} ready in ${result.toFixed(0)} ms, ${cpu.toFixed(0)} ms CPU (medians of ${RUNS}: ${runs.map((start) => start.readyMs.toFixed(0)).join(', ')} ms; first start ${first.readyMs.toFixed(0)} ms) — target < ${TARGETS[name]} ms: ${ok ? 'ok' : 'MISSED'}`,
  );
  return ok;
}

const baseEnv: NodeJS.ProcessEnv = { ...process.env };
delete baseEnv.DATABASE_URL;
delete baseEnv.NODE_OPTIONS;
let allOk = true;

const scratch = mkdtempSync(join(tmpdir(), 'bench-startup-'));
try {
  allOk = (await measure('pglite', { ...baseEnv, DATA_DIR: join(scratch, 'data') })) && allOk;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database = await scratchDatabase(adminUrl, 'bench_startup').catch((error: unknown) => {
  console.log(`postgresql skipped: ${adminUrl} did not answer (${error instanceof Error ? error.message : String(error)}); set DATABASE_URL`);
  return undefined;
});
if (database) {
  try {
    allOk = (await measure('postgresql', { ...baseEnv, DATABASE_URL: database.url })) && allOk;
  } finally {
    await database.drop();
  }
}
process.exit(allOk ? 0 : 1);
