/**
 * `npm run bench:startup`: how long the compiled server (`node dist/src/main.js`, what `npm start` and
 * the container run) takes from spawn to its first 200 from `/readyz`: on PGlite, a first start on a
 * new DATA_DIR (loaded from the build's migrated template, src/store/pglite-template.ts; target
 * < 3 s) and a restart on an existing one (target < 1 s); on PostgreSQL (a scratch database on
 * DATABASE_URL's server, or on postgres://postgres@127.0.0.1:5432/postgres when that answers; target
 * < 0.5 s); and how long a start on a PORT already in use takes to fail (target < 1 s, with no
 * DATA_DIR left behind). Printed beside an empty `node -e 0` and the load average, since a busy
 * machine stretches every figure. Prints every run and the median; exits 1 when a median misses its
 * target. `BENCH_RUNS` (default 5) timed runs per case; `BENCH_MAIN`
 * times another build (`node scripts/build.mjs --out /tmp/x/dist` with contracts/, node_modules and
 * package.json beside it) instead of `dist/src/main.js`, e.g. while others run the shared `dist/`.
 * Then `cfs` (bin/cfs.js, issue 20): spawn to exit of `cfs --help` from this checkout (the bundle
 * checked against its sources first), of the bundle alone (what an installed package runs: no
 * sources to check), and for comparison of the per-file build and of the sources under tsx (how
 * bin/cfs.js ran before), beside an empty `node -e 0`; target < 300 ms of CPU for the first two. `BENCH_ONLY=server|cfs` runs one half.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { scratchDatabase } from '../scripts/support/fresh-store.js';
import { processCpuMs } from './process-cpu.js';

const ROOT = new URL('../', import.meta.url).pathname;
const MAIN = process.env.BENCH_MAIN ?? join(ROOT, 'dist/src/main.js');
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const TARGETS = { 'pglite fresh': 3000, 'pglite restart': 1000, postgresql: 500, 'port in use': 1000 };
/** A start that never gets ready gives up after this: a minute, times how busy the machine is (load per core). */
const GIVE_UP_MS = 60_000 * Math.max(1, (loadavg()[0] ?? 0) / availableParallelism());
/**
 * "Starts in well under a second": judged on CPU, which a busy machine does not inflate the way it
 * does wall time (an idle machine gives about the CPU figure as wall time too).
 */
const CLI_CPU_TARGET_MS = 300;

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
    return pid === undefined ? undefined : processCpuMs(pid);
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

function report(name: keyof typeof TARGETS, runs: Start[], extra = ''): boolean {
  const result = median(runs.map((start) => start.readyMs));
  const cpu = median(runs.map((start) => start.cpuMs ?? Number.NaN));
  const ok = result < TARGETS[name];
  console.log(
    `${name.padEnd(14)} ready in ${result.toFixed(0)} ms, ${cpu.toFixed(0)} ms CPU (medians of ${runs.length}: ${runs.map((start) => start.readyMs.toFixed(0)).join(', ')} ms${extra}) — target < ${TARGETS[name]} ms: ${ok ? 'ok' : 'MISSED'}`,
  );
  return ok;
}

/** A store that keeps its data: the first start creates it (initdb, migrations, keys); restarts are what is measured. */
async function measureRestarts(name: 'pglite restart' | 'postgresql', env: NodeJS.ProcessEnv): Promise<boolean> {
  const first = await timeToReady(env);
  const runs: Start[] = [];
  for (let run = 0; run < RUNS; run++) runs.push(await timeToReady(env));
  return report(name, runs, `; first start ${first.readyMs.toFixed(0)} ms`);
}

/** A first start on PGlite: each run on a new DATA_DIR, what a fresh clone's `npm start` does. */
async function measureFreshPglite(dir: string): Promise<boolean> {
  const runs: Start[] = [];
  for (let run = 0; run < RUNS; run++) runs.push(await timeToReady({ ...baseEnv, DATA_DIR: join(dir, `fresh-${run}`) }));
  return report('pglite fresh', runs);
}

/** A start on a PORT another process holds: spawn to exit, and whether it left a DATA_DIR behind. */
async function measurePortInUse(dir: string): Promise<boolean> {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const address = holder.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  const runs: Start[] = [];
  let leftBehind = 0;
  try {
    for (let run = 0; run < RUNS; run++) {
      const dataDir = join(dir, `taken-${run}`);
      const started = performance.now();
      const child = spawn(process.execPath, [MAIN], {
        env: { ...baseEnv, DATA_DIR: dataDir, PORT: String(address.port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
        stdio: 'ignore',
      });
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      if (code !== 1) throw new Error(`a start on a port in use exited with ${code}, not 1`);
      runs.push({ readyMs: performance.now() - started, cpuMs: undefined });
      if (existsSync(dataDir)) leftBehind++;
    }
  } finally {
    holder.close();
  }
  const ok = report('port in use', runs, `; DATA_DIR left behind ${leftBehind} times`);
  return ok && leftBehind === 0;
}

/** An empty node's spawn-to-exit wall time: the floor of every figure above on this machine, now. */
async function nodeBaseline(): Promise<void> {
  const runs: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    await new Promise((resolve) => spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' }).once('exit', resolve));
    runs.push(performance.now() - started);
  }
  const load = loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');
  console.log(`${'node -e 0'.padEnd(14)} ${median(runs).toFixed(0)} ms (median of ${RUNS}); load average ${load} on ${availableParallelism()} cores`);
}

const baseEnv: NodeJS.ProcessEnv = { ...process.env };
delete baseEnv.DATABASE_URL;
delete baseEnv.NODE_OPTIONS;
let allOk = true;

// BENCH_ONLY=server or BENCH_ONLY=cfs runs one half.
const only = process.env.BENCH_ONLY;
const scratch = mkdtempSync(join(tmpdir(), 'bench-startup-'));
try {
  if (only !== 'cfs') {
    await nodeBaseline();
    allOk = (await measureFreshPglite(scratch)) && allOk;
    allOk = (await measureRestarts('pglite restart', { ...baseEnv, DATA_DIR: join(scratch, 'data') })) && allOk;
    allOk = (await measurePortInUse(scratch)) && allOk;
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database =
  only === 'cfs'
    ? undefined
    : await scratchDatabase(adminUrl, 'bench_startup').catch((error: unknown) => {
        console.log(`postgresql skipped: ${adminUrl} did not answer (${error instanceof Error ? error.message : String(error)}); set DATABASE_URL`);
        return undefined;
      });
if (database) {
  try {
    allOk = (await measureRestarts('postgresql', { ...baseEnv, DATABASE_URL: database.url })) && allOk;
  } finally {
    await database.drop();
  }
}
if (only !== 'server') allOk = (await measureCli()) && allOk;
if (only !== 'cfs') await nodeBaseline();
process.exit(allOk ? 0 : 1);

/** Wall and CPU milliseconds of one `node <args>` run to its exit (CPU from the child's rusage, via bash's `times`). */
function timeNode(args: string[]): Promise<{ wallMs: number; cpuMs: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    // `times` after the child exits prints the shell's children's user and system time.
    const script = `"$0" "$@" >/dev/null 2>&1; times`;
    const child = spawn('bash', ['-c', script, process.execPath, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: baseEnv });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', () => {
      const wallMs = performance.now() - started;
      // Second line: children's "0m0.120s 0m0.020s".
      const seconds = [...(output.trim().split('\n')[1] ?? '').matchAll(/(\d+)m([\d.]+)s/g)].map((match) => Number(match[1]) * 60 + Number(match[2]));
      resolve({ wallMs, cpuMs: seconds.reduce((sum, value) => sum + value, 0) * 1000 });
    });
  });
}

async function measureCli(): Promise<boolean> {
  const bundle = join(ROOT, 'dist/src/cli/cfs.js');
  const cases: Array<{ name: string; args: string[]; target?: number }> = [
    { name: 'node -e 0 (the baseline: an empty node)', args: ['-e', '0'] },
    { name: 'cfs --help (checkout: bin/cfs.js)', args: [join(ROOT, 'bin/cfs.js'), '--help'], target: CLI_CPU_TARGET_MS },
    { name: 'cfs --help (installed: the bundle)', args: [bundle, '--help'], target: CLI_CPU_TARGET_MS },
    { name: 'cfs --help (per-file build)', args: [join(ROOT, 'dist/src/cli/main.js'), '--help'] },
    { name: 'cfs --help (sources under tsx, as before)', args: ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), '--help'] },
  ];
  // The first run of bin/cfs.js builds the bundle when the sources are newer.
  await timeNode([join(ROOT, 'bin/cfs.js'), '--help']);
  let ok = true;
  for (const { name, args, target } of cases) {
    const file = args.find((arg) => arg.startsWith(ROOT));
    if (file !== undefined && !existsSync(file)) {
      console.log(`${name.padEnd(44)} skipped: not built (npm run build)`);
      continue;
    }
    const runs: Array<{ wallMs: number; cpuMs: number }> = [];
    for (let run = 0; run < RUNS; run++) runs.push(await timeNode(args));
    const wall = median(runs.map((run) => run.wallMs));
    const cpu = median(runs.map((run) => run.cpuMs));
    const verdict = target === undefined ? '' : ` — target < ${target} ms CPU: ${cpu < target ? 'ok' : 'MISSED'}`;
    if (target !== undefined && cpu >= target) ok = false;
    console.log(
      `${name.padEnd(44)} ${wall.toFixed(0)} ms, ${cpu.toFixed(0)} ms CPU (medians of ${RUNS}: ${runs.map((run) => run.wallMs.toFixed(0)).join(', ')} ms)${verdict}`,
    );
  }
  return ok;
}
