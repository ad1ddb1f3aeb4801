/**
 * `npm run test:fleet`: the compiled server (`npm run build` output) as an operator runs it, several
 * replicas on one PostgreSQL database through PgBouncer (transaction mode), behind HAProxy rendered
 * from deploy/haproxy/haproxy.cfg, under mixed load from a process of its own (test/fleet/load.ts).
 *
 *   (a) every replica restarted in turn (SIGTERM, start the new one, wait for ready): no failed
 *       request, no acknowledged write missing, no SSE event lost or duplicated, no capture stored twice;
 *   (b) one replica killed with SIGKILL mid-burst: no acknowledged write missing;
 *       operations of (a) and (b) completed exactly once;
 *   per-client limits counted per real client through HAProxy (TRUST_PROXY);
 *   (d) one replica scaled to three under L4-balanced gRPC load: each serves >= 25 % of the calls once
 *       MAX_CONNECTION_AGE_MS (+ jitter and grace) has passed;
 *   (c) ten replicas started at once on an empty database: one migration run, ten ready.
 * deploy/nginx/nginx.conf is rendered the same way, checked with `nginx -t` and sent a few requests.
 *
 * Needs PostgreSQL (FLEET_DATABASE_URL, else DATABASE_URL's server, else postgres://postgres@127.0.0.1:5432/postgres),
 * haproxy, pgbouncer and nginx (Debian's). Everything listens on loopback on free ports; every process is
 * ended and every database dropped however the run ends; FLEET_TIMEOUT_MS (600000) bounds the whole run.
 * Prints a table and exits 1 when an assertion failed.
 */
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { scratchDatabase, type ScratchDatabase } from './support/fresh-store.js';
import { renderHaproxy, renderNginx, type Slot } from '../test/fleet/configs.js';
import { PGBOUNCER, startPgBouncer } from '../test/support/pgbouncer.js';
import { duplicatedCaptures, migrationRecord, missingIds, operationOutcome, withClient } from '../test/fleet/database.js';
import type { Command, LimitsResult, PhaseResult, Report, Tally } from '../test/fleet/messages.js';
import { GaveUp, haproxyServerStates, httpStatus, Processes, waitFor, type Child } from '../test/fleet/processes.js';
import { freePort } from './support/free-port.js';
import { slowdown } from '../test/support/budget.js';

const ROOT = new URL('../', import.meta.url).pathname;
const MAIN = join(ROOT, 'dist/src/main.js');
/** The operator's command (`cfs-server start`, the package's bin) once it exists, else the entry it runs. */
const SERVER = existsSync(join(ROOT, 'bin/cfs-server.js')) ? [join(ROOT, 'bin/cfs-server.js'), 'start'] : [MAIN];
const HAPROXY = process.env.FLEET_HAPROXY ?? '/usr/sbin/haproxy';
const NGINX = process.env.FLEET_NGINX ?? '/usr/sbin/nginx';
const ADMIN_URL = process.env.FLEET_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const TIMEOUT_MS = Number(process.env.FLEET_TIMEOUT_MS ?? 600_000);

/** Sized for a busy 2-core machine: short drains and checks, so the whole run takes a few minutes. */
const CHECK = { interMs: 500, fall: 2, rise: 2 };
const SHUTDOWN_DELAY_MS = 3000;
const SHUTDOWN_GRACE_MS = 5000;
const MAX_CONNECTION_AGE_MS = 3000;
const MAX_CONNECTION_AGE_GRACE_MS = 2000;
/** What the server adds to MAX_CONNECTION_AGE_MS at most: +10 % jitter, then its grace for calls in flight. */
const CONNECTION_AGE_SLACK_MS = MAX_CONNECTION_AGE_MS * 0.1 + MAX_CONNECTION_AGE_GRACE_MS;
const SIGNIN_MAX_FAILURES = 5;
const ADMIN = { name: 'fleet-admin', password: 'fleet-admin-password' };
/** Scale timeouts with the machine's load: on a loaded 2-core host a start takes several times longer. */
const scale = (ms: number) => Math.round(ms * Math.max(1, slowdown()));

for (const [path, why] of [
  [MAIN, 'the compiled server: npm run build first'],
  [HAPROXY, 'HAProxy (apt-get install haproxy)'],
  [PGBOUNCER, 'PgBouncer (apt-get install pgbouncer)'],
  [NGINX, 'nginx (apt-get install nginx-light)'],
] as const) {
  if (!existsSync(path)) {
    console.error(`test:fleet needs ${path}, ${why}`);
    process.exit(2);
  }
}

// ---- results ------------------------------------------------------------------------------------

interface Row {
  scenario: string;
  measure: string;
  value: string;
  /** undefined: a figure only; true/false: an assertion. */
  pass?: boolean;
}
const rows: Row[] = [];
const notes: string[] = [];

function figure(scenario: string, measure: string, value: string | number): void {
  rows.push({ scenario, measure, value: String(value) });
}

function verify(scenario: string, measure: string, value: string | number, pass: boolean, why?: string): void {
  rows.push({ scenario, measure, value: String(value), pass });
  if (!pass && why) notes.push(`${scenario}: ${measure}: ${why}`);
}

// ---- the run's resources --------------------------------------------------------------------------

const started = Date.now();
const dir = mkdtempSync(join(tmpdir(), 'cfs-fleet-'));
// nginx's workers drop root and must still reach their temporary directories under it.
chmodSync(dir, 0o755);
const processes = new Processes(dir);
const databases: ScratchDatabase[] = [];
let load: ChildProcess | undefined;
let stopBouncer: (() => Promise<void>) | undefined;
let tornDown = false;

async function tearDown(): Promise<void> {
  if (tornDown) return;
  tornDown = true;
  load?.kill('SIGKILL');
  await processes.stopAll(3000);
  await stopBouncer?.();
  for (const database of databases) await database.drop().catch((error: unknown) => console.error(`dropping a database failed: ${String(error)}`));
  if (process.env.FLEET_KEEP_LOGS) console.error(`logs kept in ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}

const deadline = setTimeout(() => {
  console.error(`test:fleet: not done within FLEET_TIMEOUT_MS (${TIMEOUT_MS} ms); tearing down`);
  printTable();
  void tearDown().finally(() => process.exit(1));
}, TIMEOUT_MS);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    console.error(`test:fleet: ${signal}; tearing down`);
    void tearDown().finally(() => process.exit(130));
  });
}

// ---- replicas --------------------------------------------------------------------------------------

interface Replica {
  name: string;
  port: number;
  child: Child;
}

let generation = 0;

/** The environment of every replica: the pool through PgBouncer, LISTEN and locks directly. */
function replicaEnv(database: string, bouncerPort: number, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const direct = new URL(ADMIN_URL);
  direct.pathname = `/${database}`;
  const pooled = new URL(direct);
  pooled.hostname = '127.0.0.1';
  pooled.port = String(bouncerPort);
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    DATABASE_URL: pooled.toString(),
    DATABASE_LISTEN_URL: direct.toString(),
    DATABASE_POOL_MODE: 'transaction',
    ADMIN_USERNAME: ADMIN.name,
    ADMIN_PASSWORD: ADMIN.password,
    TRUST_PROXY: '127.0.0.1/32',
    PROXY_PROTOCOL: 'true',
    SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS),
    SHUTDOWN_GRACE_MS: String(SHUTDOWN_GRACE_MS),
    MAX_CONNECTION_AGE_MS: String(MAX_CONNECTION_AGE_MS),
    MAX_CONNECTION_AGE_GRACE_MS: String(MAX_CONNECTION_AGE_GRACE_MS),
    SIGNIN_MAX_FAILURES: String(SIGNIN_MAX_FAILURES),
    // An operation claimed by a killed replica is taken over after the lease, not 30 s later.
    OPERATION_LEASE_MS: '3000',
    OPERATION_POLL_MS: '200',
    COMPUTE_WORK_MS: '50',
    QUOTA_INSTANCES_PER_PROJECT: '100000',
    // Every capture of the run stays, so each acknowledged one can be looked for.
    WEBHOOK_MAX_REQUESTS: '1000000',
    ...extra,
  };
}

function startReplica(name: string, port: number, env: NodeJS.ProcessEnv): Replica {
  const child = processes.start(`${name}.${++generation}`, process.execPath, SERVER, { ...env, PORT: String(port) });
  return { name, port, child };
}

async function waitReady(replica: Replica, timeoutMs = scale(60_000)): Promise<number> {
  let exited: string | undefined;
  void replica.child.exited.then((code) => (exited = String(code)));
  return waitFor(`${replica.child.name} on port ${replica.port} to answer /readyz 200`, timeoutMs, async () => {
    if (exited !== undefined) throw new GaveUp(`${replica.child.name} exited (${exited}) before it was ready:\n${Processes.tail(replica.child)}`);
    return (await httpStatus(replica.port, '/readyz')) === 200;
  });
}

// ---- the load process -----------------------------------------------------------------------------

const pending: ((report: Report) => boolean)[] = [];

function startLoad(): ChildProcess {
  const child = fork(join(ROOT, 'test/fleet/load.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  child.on('message', (report: Report) => {
    const index = pending.findIndex((take) => take(report));
    if (index >= 0) pending.splice(index, 1);
    else if (report.type === 'error') console.error(`load process: ${report.message}`);
  });
  child.on('exit', (code) => {
    const failed = pending.splice(0);
    for (const take of failed) take({ type: 'error', message: `the load process exited (${code})` });
  });
  return child;
}

/** Sends `command` and answers the load process's report of type `type` (its error as an exception). */
function ask<T extends Report['type']>(command: Command, type: T, timeoutMs = scale(120_000)): Promise<Extract<Report, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the load process did not answer ${command.type} within ${timeoutMs} ms`)), timeoutMs);
    pending.push((report) => {
      if (report.type === 'error') {
        clearTimeout(timer);
        reject(new Error(`load process: ${report.message}`));
        return true;
      }
      if (report.type !== type) return false;
      clearTimeout(timer);
      resolve(report as Extract<Report, { type: T }>);
      return true;
    });
    load?.send(command);
  });
}

const tell = (command: Command) => load?.send(command);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- the run ---------------------------------------------------------------------------------------

let setupFailed: unknown;
try {
  await run();
} catch (error) {
  setupFailed = error;
} finally {
  clearTimeout(deadline);
  await tearDown();
}
printTable();
if (setupFailed)
  console.error(`\ntest:fleet stopped early: ${setupFailed instanceof Error ? (setupFailed.stack ?? setupFailed.message) : String(setupFailed)}`);
const failed = rows.filter((row) => row.pass === false).length;
const asserted = rows.filter((row) => row.pass !== undefined).length;
const elapsed = ((Date.now() - started) / 1000).toFixed(0);
console.log(
  failed || setupFailed
    ? `\ntest:fleet FAILED: ${failed} of ${asserted} assertions failed${setupFailed ? ', and the run stopped early' : ''} (${elapsed} s)`
    : `\ntest:fleet passed: ${asserted} assertions (${elapsed} s, load average ${loadAverage()})`,
);
process.exit(failed || setupFailed ? 1 : 0);

async function run(): Promise<void> {
  const runStart = Date.now();
  figure('host', 'baseline: node -e 0', `${await nodeStartMs()} ms`);
  figure('host', 'load average at start', loadAverage());

  // PgBouncer, transaction mode, default settings (the PgBouncer test's own start: test/support/pgbouncer.ts).
  const bouncer = await startPgBouncer(ADMIN_URL);
  stopBouncer = bouncer.stop;
  const bouncerPort = Number(new URL(bouncer.url).port);
  const database = await scratchDatabase(ADMIN_URL, 'fleet');
  databases.push(database);
  const databaseName = new URL(database.url).pathname.slice(1);

  // Two slots per replica: a restarted replica starts on the other one while the old one drains.
  const slots: Slot[][] = [];
  for (let i = 1; i <= 3; i++)
    slots.push([
      { name: `r${i}a`, port: await freePort() },
      { name: `r${i}b`, port: await freePort() },
    ]);
  const httpPort = await freePort();
  const grpcPort = await freePort();
  const statsSocket = join(dir, 'haproxy.sock');
  const haproxyConfig = join(dir, 'haproxy.cfg');
  writeFileSync(haproxyConfig, renderHaproxy({ httpPort, grpcPort, slots: slots.flat(), check: CHECK, statsSocket }));
  await promisify(execFile)(HAPROXY, ['-c', '-q', '-f', haproxyConfig]).catch((error: { stderr?: string }) => {
    throw new Error(`haproxy -c refused the rendered deploy/haproxy/haproxy.cfg: ${error.stderr ?? String(error)}`);
  });
  const haproxy = processes.start('haproxy', HAPROXY, ['-db', '-f', haproxyConfig]);
  await waitFor('HAProxy to open its admin socket', scale(10_000), async () => {
    if (haproxy.process.exitCode !== null) throw new GaveUp(`haproxy exited:\n${Processes.tail(haproxy)}`);
    return (await haproxyServerStates(statsSocket, 'cfs_http')).size === 6;
  });

  const env = replicaEnv(databaseName, bouncerPort);
  // The first replica migrates the empty database alone (concurrent first starts are scenario (c)).
  const replicas: Replica[] = [];
  const current = [0, 0, 0];
  replicas[0] = startReplica('r1', slots[0]![0]!.port, env);
  figure('setup', 'first replica ready (migrations included)', `${await waitReady(replicas[0])} ms`);
  for (const i of [1, 2]) replicas[i] = startReplica(`r${i + 1}`, slots[i]![0]!.port, env);
  await Promise.all([waitReady(replicas[1]!), waitReady(replicas[2]!)]);
  const active = () => replicas.map((replica, i) => slots[i]![current[i]!]!.name);
  await waitForBalancer(
    statsSocket,
    active(),
    slots.flat().map((slot) => slot.name),
  );

  await checkNginx(replicas.map((replica) => replica.port));

  load = startLoad();
  await ask({ type: 'setup', targets: { httpPort, grpcPort, admin: ADMIN, phases: ['a', 'b'], signInMaxFailures: SIGNIN_MAX_FAILURES } }, 'ready');

  figure('setup', 'took', seconds(runStart));

  // (a) rolling restart: SIGTERM, start the new one on the other slot, wait until HAProxy routes to it.
  const aStart = Date.now();
  tell({ type: 'phase', name: 'a' });
  await pause(2000);
  const drains: number[] = [];
  for (let i = 0; i < 3; i++) {
    const old = replicas[i]!;
    const stopping = Date.now();
    old.child.process.kill('SIGTERM');
    const exited = old.child.exited.then((code) => {
      drains.push(Date.now() - stopping);
      return code;
    });
    current[i] = 1 - current[i]!;
    const next = startReplica(`r${i + 1}`, slots[i]![current[i]!]!.port, env);
    replicas[i] = next;
    await waitReady(next);
    await waitForBalancer(
      statsSocket,
      active(),
      slots.flat().map((slot) => slot.name),
    );
    const code = await exited;
    if (code !== 0) notes.push(`(a): ${old.child.name} exited with ${code} after SIGTERM:\n${Processes.tail(old.child)}`);
    await pause(1000);
  }
  figure('(a) rolling restart', 'SIGTERM to exit, per replica', drains.map((ms) => `${ms} ms`).join(', '));
  figure('(a) rolling restart', 'took', seconds(aStart));

  // (b) SIGKILL mid-burst, then a replacement.
  const bStart = Date.now();
  tell({ type: 'phase', name: 'b' });
  await pause(2000);
  const victim = replicas[1]!;
  victim.child.process.kill('SIGKILL');
  await victim.child.exited;
  current[1] = 1 - current[1]!;
  replicas[1] = startReplica('r2', slots[1]![current[1]!]!.port, env);
  await waitReady(replicas[1]);
  await waitForBalancer(
    statsSocket,
    active(),
    slots.flat().map((slot) => slot.name),
  );
  await pause(2000);
  await ask({ type: 'stop-load' }, 'stopped');
  figure('(b) SIGKILL mid-burst', 'took', seconds(bStart));
  const settled = await ask({ type: 'settle', timeoutMs: scale(15_000) }, 'settled', scale(60_000));
  await checkWrites(database.url, settled.phases);

  // Per-client limits through HAProxy.
  const limits = await ask({ type: 'limits' }, 'limits');
  checkLimits(limits.result);

  // (d) one replica to three under L4-balanced gRPC load.
  const dStart = Date.now();
  await Promise.all([1, 2].map((i) => processes.stop(replicas[i]!.child, SHUTDOWN_DELAY_MS + SHUTDOWN_GRACE_MS + 5000)));
  await waitForBalancer(
    statsSocket,
    [active()[0]!],
    slots.flat().map((slot) => slot.name),
  );
  await ask({ type: 'spread', connections: 12 }, 'spreading');
  await pause(1000);
  for (const i of [1, 2]) {
    current[i] = 1 - current[i]!;
    replicas[i] = startReplica(`r${i + 1}`, slots[i]![current[i]!]!.port, env);
  }
  await Promise.all([waitReady(replicas[1]!), waitReady(replicas[2]!)]);
  await waitForBalancer(
    statsSocket,
    active(),
    slots.flat().map((slot) => slot.name),
  );
  const scaledOut = Date.now();
  const windowStart = scaledOut + MAX_CONNECTION_AGE_MS + CONNECTION_AGE_SLACK_MS;
  const windowMs = 6000;
  await pause(windowStart + windowMs - Date.now());
  const spread = await ask({ type: 'stop-spread' }, 'spread-stopped');
  checkSpread(replicas, windowStart, windowStart + windowMs, spread.tally);
  figure('(d) scale 1 -> 3, gRPC over L4', 'took', seconds(dStart));

  tell({ type: 'exit' });
  await Promise.all(replicas.map((replica) => processes.stop(replica.child, SHUTDOWN_DELAY_MS + SHUTDOWN_GRACE_MS + 5000)));

  // (c) ten replicas at once on an empty database.
  await concurrentStarts(bouncerPort);
}

/** Waits until HAProxy routes to exactly the `up` servers of both backends. */
async function waitForBalancer(socket: string, up: string[], all: string[]): Promise<void> {
  await waitFor(`HAProxy to see ${up.join(', ')} up and the other slots down`, scale(20_000), async () => {
    for (const backend of ['cfs_http', 'cfs_grpc']) {
      const states = await haproxyServerStates(socket, backend);
      for (const name of all) {
        const state = states.get(name) ?? '';
        if (up.includes(name) ? state !== 'UP' : !state.startsWith('DOWN')) return false;
      }
    }
    return true;
  });
}

async function checkWrites(url: string, phases: Record<string, PhaseResult>): Promise<void> {
  const a = phases.a!;
  const b = phases.b!;
  for (const [scenario, result] of [
    ['(a) rolling restart', a],
    ['(b) SIGKILL mid-burst', b],
  ] as const) {
    const tallies = Object.entries(result.tallies);
    const total = tallies.reduce((sum, [, tally]) => sum + tally.ok + tally.failed, 0);
    const failedCount = tallies.reduce((sum, [, tally]) => sum + tally.failed, 0);
    figure(
      scenario,
      'requests (rest read / rest write / capture / grpc get / grpc create)',
      ['rest read', 'rest write', 'capture', 'grpc get', 'grpc create'].map((kind) => count(result.tallies[kind])).join(' / '),
    );
    const examples = tallies.flatMap(([kind, tally]) => tally.examples.map((example) => `${kind}: ${example}`));
    if (result === a) verify(scenario, 'failed requests', `${failedCount} of ${total}`, failedCount === 0, examples.join('\n    '));
    else {
      figure(scenario, 'failed requests (not asserted: a killed replica drops what it holds)', `${failedCount} of ${total}`);
      if (failedCount) notes.push(`(b) failures, for the record:\n    ${examples.join('\n    ')}`);
    }
  }
  await withClient(url, async (client) => {
    for (const [scenario, result] of [
      ['(a) rolling restart', a],
      ['(b) SIGKILL mid-burst', b],
    ] as const) {
      const captures = await missingIds(
        client,
        'webhook_requests',
        result.captures.map((capture) => capture.id),
      );
      const users = await missingIds(client, 'users', result.users);
      const acknowledged = result.captures.length + result.users.length + result.operations.length;
      const { rows: found } = await client.query<{ count: string }>('SELECT count(*)::text AS count FROM operations WHERE id = ANY($1::text[])', [
        result.operations.map((operation) => operation.id),
      ]);
      const missingOperations = result.operations.length - Number(found[0]?.count ?? 0);
      const missing = captures.length + users.length + missingOperations;
      verify(scenario, 'acknowledged writes missing', `${missing} of ${acknowledged}`, missing === 0, [...captures, ...users].slice(0, 5).join(', '));
    }
    const duplicatesA = await duplicatedCaptures(client, [a.routeId]);
    verify(
      '(a) rolling restart',
      'captures stored twice (retry-on conn-failure empty-response)',
      duplicatesA.length,
      duplicatesA.length === 0,
      duplicatesA.slice(0, 5).join(', '),
    );
    const duplicatesB = await duplicatedCaptures(client, [b.routeId]);
    figure('(b) SIGKILL mid-burst', 'captures stored twice (not asserted: killed between commit and answer, then retried)', duplicatesB.length);
    const sse = a.sse;
    verify(
      '(a) rolling restart',
      'SSE events lost / duplicated',
      `${sse.lost} / ${sse.duplicated} of ${a.captures.length} (${sse.reconnects} reconnects)`,
      sse.lost + sse.duplicated === 0,
      sse.examples.join('\n    '),
    );
    figure(
      '(b) SIGKILL mid-burst',
      'SSE events lost / duplicated',
      `${b.sse.lost} / ${b.sse.duplicated} of ${b.captures.length} (${b.sse.reconnects} reconnects)`,
    );

    // Operations finish in the background: a killed replica's claim is taken over after OPERATION_LEASE_MS.
    const operations = [...a.operations, ...b.operations];
    let outcome = await operationOutcome(client, operations);
    const waitStart = Date.now();
    while (outcome.unfinished.length > 0 && Date.now() - waitStart < scale(30_000)) {
      await pause(500);
      outcome = await operationOutcome(client, operations);
    }
    const wrong = outcome.unfinished.length + outcome.notOnce.length + outcome.doubled.length;
    verify(
      '(a)+(b)',
      'operations completed exactly once',
      `${operations.length - wrong} of ${operations.length} (${a.retriedKeys + b.retriedKeys} retried with their key)`,
      wrong === 0 && operations.length > 0,
      [...outcome.unfinished.map((id) => `unfinished ${id}`), ...outcome.notOnce, ...outcome.doubled].slice(0, 5).join(', '),
    );
  });
}

function count(tally: Tally | undefined): string {
  return tally ? String(tally.ok + tally.failed) : '0';
}

function checkLimits(result: LimitsResult): void {
  const scenario = 'limits via HAProxy';
  const statuses = result.throttledStatuses.join(' ');
  const throttled = result.throttledStatuses.at(-1) === 429 && result.throttledCorrect === 429;
  verify(
    scenario,
    `127.0.0.2: ${SIGNIN_MAX_FAILURES} wrong passwords, then one more, then the right one`,
    `${statuses} ${result.throttledCorrect}`,
    throttled,
    'the client that failed was not throttled',
  );
  verify(
    scenario,
    '127.0.0.3: the right password for the same name',
    result.otherCorrect,
    result.otherCorrect === 200,
    'another client was throttled with it: the limit counts HAProxy, not the client (TRUST_PROXY not honoured?)',
  );
}

/** Request log lines of InstanceService.Get per replica with a `time` within [from, to). */
function checkSpread(replicas: Replica[], from: number, to: number, tally: Tally): void {
  const scenario = '(d) scale 1 -> 3, gRPC over L4';
  const served = replicas.map((replica) => {
    const log = readFileSync(replica.child.log, 'utf8');
    let calls = 0;
    for (const line of log.split('\n')) {
      if (!line.includes('InstanceService/Get')) continue;
      const time = Number(/"time":(\d+)/.exec(line)?.[1]);
      if (time >= from && time < to) calls++;
    }
    return calls;
  });
  const total = served.reduce((sum, calls) => sum + calls, 0);
  const shares = served.map((calls) => (total ? calls / total : 0));
  figure(scenario, 'calls (failed) over the whole scenario', `${tally.ok + tally.failed} (${tally.failed})`);
  verify(
    scenario,
    `share of calls per replica, ${(MAX_CONNECTION_AGE_MS + CONNECTION_AGE_SLACK_MS) / 1000}-${(MAX_CONNECTION_AGE_MS + CONNECTION_AGE_SLACK_MS + to - from) / 1000} s after the scale-out`,
    shares.map((share) => `${(share * 100).toFixed(0)} %`).join(' / ') + ` of ${total}`,
    total > 0 && shares.every((share) => share >= 0.25),
    'a replica got less than 25 %: long-lived HTTP/2 connections stayed pinned (MAX_CONNECTION_AGE_MS not honoured?)',
  );
}

/** (c): ten replicas at once on an empty database, through the same PgBouncer. */
async function concurrentStarts(bouncerPort: number): Promise<void> {
  const scenario = '(c) 10 replicas at once, empty db';
  const database = await scratchDatabase(ADMIN_URL, 'fleet_c');
  databases.push(database);
  const env = replicaEnv(new URL(database.url).pathname.slice(1), bouncerPort);
  const replicas: Replica[] = [];
  for (let i = 1; i <= 10; i++) replicas.push(startReplica(`c${i}`, await freePort(), env));
  const startedAt = Date.now();
  const ready = await Promise.all(
    replicas.map((replica) =>
      waitReady(replica, scale(120_000)).then(
        () => Date.now() - startedAt,
        (error: unknown) => {
          notes.push(`${scenario}: ${error instanceof Error ? error.message : String(error)}`);
          return undefined;
        },
      ),
    ),
  );
  const readyTimes = ready.filter((ms): ms is number => ms !== undefined);
  verify(scenario, 'replicas ready', `${readyTimes.length} of 10`, readyTimes.length === 10);
  if (readyTimes.length) figure(scenario, 'all ready after', `${Math.max(...readyTimes)} ms`);
  const record = await withClient(database.url, migrationRecord);
  verify(
    scenario,
    'migration runs (knex batches) / migrations recorded twice',
    `${record.batches} / ${record.repeated} (${record.migrations} migrations)`,
    record.batches === 1 && record.repeated === 0,
    'the migrations ran more than once, or not at all',
  );
  await Promise.all(replicas.map((replica) => processes.stop(replica.child, SHUTDOWN_DELAY_MS + SHUTDOWN_GRACE_MS + 5000)));
  figure(scenario, 'took', seconds(startedAt));
}

/** deploy/nginx/nginx.conf, rendered: `nginx -t`, then a REST and a gRPC request through it. */
async function checkNginx(replicaPorts: number[]): Promise<void> {
  const scenario = 'nginx (deploy/nginx)';
  const httpPort = await freePort();
  const grpcPort = await freePort();
  const config = join(dir, 'nginx.conf');
  writeFileSync(config, renderNginx({ httpPort, grpcPort, replicaPorts, dir }));
  const test = await promisify(execFile)(NGINX, ['-t', '-c', config]).then(
    () => '',
    (error: { stderr?: string }) => error.stderr ?? String(error),
  );
  verify(scenario, 'nginx -t', test ? 'refused' : 'ok', test === '', test);
  if (test) return;
  const nginx = processes.start('nginx', NGINX, ['-c', config, '-g', 'daemon off;']);
  await waitFor('nginx to listen', scale(10_000), async () => {
    if (nginx.process.exitCode !== null) throw new GaveUp(`nginx exited:\n${Processes.tail(nginx)}`);
    return (await httpStatus(httpPort, '/healthz')) === 200;
  });
  const rest = await httpStatus(httpPort, '/api');
  const grpc = await promisify(execFile)(join(ROOT, 'node_modules/.bin/buf'), [
    'curl',
    '--protocol',
    'grpc',
    '--http2-prior-knowledge',
    '-d',
    '{}',
    `http://127.0.0.1:${grpcPort}/grpc.health.v1.Health/Check`,
  ]).then(
    ({ stdout }) => (stdout.includes('SERVING') ? 'SERVING' : stdout.trim()),
    (error: { stderr?: string }) => (error.stderr ?? String(error)).trim(),
  );
  verify(scenario, 'GET /api and gRPC Health/Check through nginx', `${rest}, ${grpc}`, rest === 200 && grpc === 'SERVING');
  await processes.stop(nginx, 3000);
}

// ---- output -----------------------------------------------------------------------------------------

function printTable(): void {
  const header = ['scenario', 'measure', 'value', 'result'];
  const body = rows.map((row) => [row.scenario, row.measure, row.value, row.pass === undefined ? '' : row.pass ? 'ok' : 'FAIL']);
  const widths = header.map((title, column) => Math.max(title.length, ...body.map((cells) => (cells[column] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  console.log(`\n${line(header)}\n${widths.map((width) => '-'.repeat(width)).join('  ')}`);
  for (const cells of body) console.log(line(cells));
  if (notes.length) console.log(`\n${notes.join('\n')}`);
}

function seconds(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)} s`;
}

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

async function nodeStartMs(): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const begin = performance.now();
    await promisify(execFile)(process.execPath, ['-e', '0']);
    times.push(performance.now() - begin);
  }
  return Math.round(times.sort((x, y) => x - y)[1] ?? 0);
}
