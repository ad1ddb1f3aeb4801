/**
 * `npm run bench:abuse`: a bounded soak of the attacks and faults of the hardening issue against one
 * live server (PGlite in a temporary data directory, or PostgreSQL with DATABASE_URL), loopback only.
 *
 *   crash       HTTP/2 gRPC streams that announce 1 MiB, send 1 KiB, and drop the session
 *   body-size   a gzip bomb to a Connect path, a 5 MiB native gRPC message, an 8 MiB REST body
 *   slow-socket idle and slow-header sockets (the server must close them itself)
 *   route-flood anonymous webhook route creation from one address
 *   fragment    a GraphQL query of nested fragment spreads
 *   kill -9     webhook captures acknowledged, then the server killed; restarted, every one stored
 *
 * It prints crashes, max RSS of the server, 5xx answers and acknowledged vs stored captures, and exits
 * non-zero when the server crashed, answered 5xx, held a socket open, lost an acknowledged capture, or
 * grew past BENCH_MAX_RSS_MB.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import pg from 'pg';
import { scratchDatabase } from '../scripts/support/fresh-store.js';

const ROOT = new URL('../', import.meta.url).pathname;
const MAX_RSS_MB = Number(process.env.BENCH_MAX_RSS_MB ?? 1024);
const SLOW_SOCKETS = 200;
const FLOOD_SECONDS = 5;
const KILL_AFTER_MS = 1500;
const SUPERUSER = { email: 'bench@example.com', password: 'bench-password-1' };

const scratch = mkdtempSync(join(tmpdir(), 'bench-abuse-'));
const dataDir = join(scratch, 'data');
const adminUrl = process.env.DATABASE_URL;
const database = adminUrl ? await scratchDatabase(adminUrl, 'bench_abuse') : undefined;
const databaseUrl = database?.url;

const env: NodeJS.ProcessEnv = {
  ...process.env,
  LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent',
  PORT: '0',
  DATA_DIR: dataDir,
  SUPERUSER_EMAIL: SUPERUSER.email,
  SUPERUSER_PASSWORD: SUPERUSER.password,
  // Short socket timeouts so the slow-socket case ends in seconds (the defaults are documented in the README).
  HEADERS_TIMEOUT_MS: process.env.HEADERS_TIMEOUT_MS ?? '2000',
  FIRST_BYTE_TIMEOUT_MS: process.env.FIRST_BYTE_TIMEOUT_MS ?? '2000',
  REQUEST_TIMEOUT_MS: process.env.REQUEST_TIMEOUT_MS ?? '5000',
  WEBHOOK_MAX_REQUESTS: '1000000',
};
if (databaseUrl) env.DATABASE_URL = databaseUrl;
else delete env.DATABASE_URL;

const report = { crashes: 0, maxRssMb: 0, fiveXx: 0, socketsLeftOpen: 0, acknowledged: 0, stored: 0, failures: [] as string[] };
let server: Server | undefined;

try {
  server = await startServer();
  const base = `http://127.0.0.1:${server.port}`;
  // The kill -9 case's route is made first: the route-flood case uses up this address's allowance.
  const created = await fetch(`${base}/routes`, { method: 'POST' });
  if (created.status !== 201) throw new Error(`POST /routes answered ${created.status}`);
  const { routeId } = (await created.json()) as { routeId: string };

  await step('crash: 40 sessions x 8 gRPC streams announcing 1 MiB, sending 1 KiB, then destroyed', async () => {
    for (let session = 0; session < 40; session += 1) await truncatedGrpcSession(server!.port, 8);
    await expectAlive(base);
  });

  await step('body-size: gzip bomb (Connect JSON), 5 MiB native gRPC message, 8 MiB REST body', async () => {
    const bomb = gzipSync(Buffer.alloc(300 * 1024 * 1024, 0x20), { level: 9 });
    const bombAnswer = await send(base, '/cloud.compute.v1.InstanceService/Get', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'connect-protocol-version': '1' },
      body: bomb,
    });
    console.log(`  gzip bomb of ${(bomb.length / 1024).toFixed(0)} KiB -> HTTP ${bombAnswer || `none (${lastSendError})`}`);
    if (bombAnswer < 400 || bombAnswer >= 500) report.failures.push(`gzip bomb answered ${bombAnswer}`);
    const grpcStatus = await oversizedGrpcMessage(server!.port, 5 * 1024 * 1024);
    console.log(`  5 MiB gRPC message -> grpc-status ${grpcStatus}`);
    if (grpcStatus !== '8') report.failures.push(`5 MiB gRPC message ended with grpc-status ${grpcStatus} (want 8 RESOURCE_EXHAUSTED)`);
    const restAnswer = await send(base, '/api/users', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(8 * 1024 * 1024, 0x20),
    });
    console.log(`  8 MiB REST body -> HTTP ${restAnswer}`);
    if (restAnswer !== 413) report.failures.push(`8 MiB REST body answered ${restAnswer} (want 413)`);
    await expectAlive(base);
  });

  await step(`slow-socket: ${SLOW_SOCKETS} idle and slow-header sockets`, async () => {
    const sockets = await Promise.all(
      Array.from({ length: SLOW_SOCKETS }, (_, index) => openSlowSocket(server!.port, index % 2 === 0 ? '' : 'GET /healthz HTTP/1.1\r\nHost: x\r\n')),
    );
    const deadline = Number(env.HEADERS_TIMEOUT_MS) + Number(env.REQUEST_TIMEOUT_MS) + 5000;
    const closed = await Promise.all(sockets.map((socket) => closedWithin(socket, deadline)));
    report.socketsLeftOpen = closed.filter((wasClosed) => !wasClosed).length;
    for (const socket of sockets) socket.destroy();
    console.log(`  closed by the server: ${closed.length - report.socketsLeftOpen}/${SLOW_SOCKETS}`);
    await expectAlive(base);
  });

  await step(`route-flood: anonymous POST /routes for ${FLOOD_SECONDS} s, 32 at a time`, async () => {
    const counts = new Map<number, number>();
    const until = Date.now() + FLOOD_SECONDS * 1000;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (Date.now() < until) {
          const status = await send(base, '/routes', { method: 'POST', agent });
          counts.set(status, (counts.get(status) ?? 0) + 1);
        }
      }),
    );
    agent.destroy();
    console.log(`  answers: ${[...counts].map(([status, count]) => `${status}×${count}`).join(', ')}`);
    if ((counts.get(201) ?? 0) > 1000) report.failures.push(`route creation not limited: ${counts.get(201)} routes in ${FLOOD_SECONDS} s`);
    await expectAlive(base);
  });

  await step('fragment: nested fragment spreads (each fragment spreads the previous twice)', async () => {
    const token = await publishingToken(base);
    const started = performance.now();
    const response = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: nestedFragments(30) }),
    });
    const answer = (await response.json()) as { errors?: Array<{ message: string }> };
    const ms = performance.now() - started;
    if (response.status >= 500) report.fiveXx += 1;
    console.log(`  answered ${response.status} in ${ms.toFixed(0)} ms: ${answer.errors?.[0]?.message ?? 'no error'}`);
    if (ms > 1000) report.failures.push(`fragment query took ${ms.toFixed(0)} ms`);
    if (!answer.errors) report.failures.push('the fragment query was executed, not refused');
    await expectAlive(base);
  });

  await step(`kill -9: webhook captures for ${KILL_AFTER_MS} ms, SIGKILL, restart, count`, async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    let killed = false;
    const killer = setTimeout(() => {
      killed = true;
      server!.child.kill('SIGKILL');
    }, KILL_AFTER_MS);
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (!killed) {
          const status = await send(base, `/${routeId}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: Buffer.from('{"n":1}'),
            agent,
          }).catch(() => 0);
          if (status >= 200 && status < 300 && !killed) report.acknowledged += 1;
        }
      }),
    );
    clearTimeout(killer);
    agent.destroy();
    await server!.exited;
    server = await startServer();
    report.stored = await countCaptures(routeId);
    console.log(`  acknowledged ${report.acknowledged}, stored after restart ${report.stored}`);
  });
} catch (error) {
  report.failures.push(error instanceof Error ? error.message : String(error));
} finally {
  if (server && server.child.exitCode === null) server.child.kill('SIGTERM');
  if (server) await server.exited;
  await database?.drop().catch(() => undefined);
  rmSync(scratch, { recursive: true, force: true });
}

console.log('');
console.log(`store ${databaseUrl ? 'PostgreSQL' : 'PGlite'}`);
console.log(`crashes ${report.crashes}`);
console.log(`max RSS ${report.maxRssMb.toFixed(0)} MB (limit ${MAX_RSS_MB})`);
console.log(`5xx answers ${report.fiveXx}`);
console.log(`sockets left open ${report.socketsLeftOpen}`);
console.log(`captures acknowledged ${report.acknowledged}, stored ${report.stored}, lost ${Math.max(0, report.acknowledged - report.stored)}`);
for (const failure of report.failures) console.log(`FAIL ${failure}`);
const failed =
  report.crashes > 0 ||
  report.fiveXx > 0 ||
  report.socketsLeftOpen > 0 ||
  report.stored < report.acknowledged ||
  report.maxRssMb > MAX_RSS_MB ||
  report.failures.length > 0;
console.log(failed ? 'abuse soak: FAILED' : 'abuse soak: passed');
process.exitCode = failed ? 1 : 0;

interface Server {
  child: ChildProcess;
  port: number;
  exited: Promise<void>;
}

/** Starts `bench/full-server.ts` (the server as `npm start` builds it) and samples its RSS until it exits. */
function startServer(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/full-server.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
    const sampler = setInterval(() => {
      const rss = rssMb(child.pid);
      if (rss > report.maxRssMb) report.maxRssMb = rss;
    }, 100);
    const exited = new Promise<void>((done) =>
      child.once('exit', (code, signal) => {
        clearInterval(sampler);
        // A signal this driver sent is not a crash; any other exit before the driver stops it is.
        if (signal !== 'SIGKILL' && signal !== 'SIGTERM' && code !== 0) report.crashes += 1;
        done();
      }),
    );
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening (\d+)/.exec(output);
      if (match) resolve({ child, port: Number(match[1]), exited });
    });
    child.once('exit', (code) => {
      reject(new Error(`the server exited with ${code} before listening`));
    });
  });
}

function rssMb(pid: number | undefined): number {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return Number(kb ?? 0) / 1024;
  } catch {
    return 0;
  }
}

async function step(title: string, run: () => Promise<void>): Promise<void> {
  const started = performance.now();
  console.log(`${title}`);
  await run();
  console.log(`  done in ${((performance.now() - started) / 1000).toFixed(1)} s, server RSS max so far ${report.maxRssMb.toFixed(0)} MB`);
}

async function expectAlive(base: string): Promise<void> {
  if (server!.child.exitCode !== null || server!.child.signalCode !== null) throw new Error('the server died');
  const status = await send(base, '/healthz', { method: 'GET' });
  if (status !== 200) throw new Error(`/healthz answered ${status}`);
}

let lastSendError = '';

/** One HTTP/1.1 request; answers the status (5xx are counted), 0 when the connection failed. */
function send(base: string, path: string, options: { method: string; headers?: Record<string, string>; body?: Buffer; agent?: http.Agent }): Promise<number> {
  return new Promise((resolve) => {
    const request = http.request(`${base}${path}`, { method: options.method, headers: options.headers, agent: options.agent }, (response) => {
      response.resume();
      response.once('end', () => {
        const status = response.statusCode ?? 0;
        if (status >= 500) report.fiveXx += 1;
        resolve(status);
      });
    });
    request.once('error', (error: NodeJS.ErrnoException) => {
      lastSendError = error.code ?? error.message;
      resolve(0);
    });
    request.end(options.body);
  });
}

function truncatedGrpcSession(port: number, streams: number): Promise<void> {
  return new Promise((resolve) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => undefined);
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(1024 * 1024, 1);
    // Drop the session once every stream's 1 KiB is on the wire (or after 2 s, if the server stopped reading).
    const drop = () => {
      clearTimeout(timer);
      session.destroy();
      resolve();
    };
    const timer = setTimeout(drop, 2000);
    let written = 0;
    for (let index = 0; index < streams; index += 1) {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/cloud.compute.v1.InstanceService/Get',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      stream.on('error', () => undefined);
      stream.write(Buffer.concat([prefix, Buffer.alloc(1024, 1)]), () => {
        written += 1;
        if (written === streams) drop();
      });
    }
  });
}

function oversizedGrpcMessage(port: number, size: number): Promise<string> {
  return new Promise((resolve) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => undefined);
    const timer = setTimeout(() => {
      session.destroy();
      resolve('none within 10 s');
    }, 10_000);
    const stream = session.request({ ':method': 'POST', ':path': '/cloud.compute.v1.InstanceService/Get', 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', () => undefined);
    let status: string | undefined;
    stream.on('response', (headers) => (status = headers['grpc-status'] as string | undefined));
    stream.on('trailers', (trailers) => (status = trailers['grpc-status'] as string | undefined));
    stream.on('close', () => {
      clearTimeout(timer);
      session.close();
      resolve(status ?? 'none');
    });
    stream.resume();
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(size, 1);
    stream.end(Buffer.concat([prefix, Buffer.alloc(size, 1)]));
  });
}

function openSlowSocket(port: number, partial: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      if (partial) socket.write(partial);
      resolve(socket);
    });
    socket.on('error', () => undefined);
    socket.once('error', reject);
  });
}

function closedWithin(socket: net.Socket, ms: number): Promise<boolean> {
  if (socket.destroyed || socket.readableEnded) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
    socket.resume();
  });
}

async function publishingToken(base: string): Promise<string> {
  const response = await fetch(`${base}/v1/writers/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(SUPERUSER),
  });
  if (!response.ok) throw new Error(`publishing sign-in answered ${response.status}`);
  return ((await response.json()) as { accessToken: string }).accessToken;
}

/** F0 selects `me { name }`; every later fragment spreads the one before it twice: 2^n paths from a short query. */
function nestedFragments(levels: number): string {
  const fragments = ['fragment F0 on Query { me { name } }'];
  for (let level = 1; level <= levels; level += 1) fragments.push(`fragment F${level} on Query { ...F${level - 1} ...F${level - 1} }`);
  return `query { ...F${levels} } ${fragments.join(' ')}`;
}

async function countCaptures(routeId: string): Promise<number> {
  if (databaseUrl) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const result = await client.query<{ count: string }>('SELECT count(*) FROM webhook_requests WHERE route_id = $1', [routeId]);
      return Number(result.rows[0]?.count ?? 0);
    } finally {
      await client.end();
    }
  }
  // PGlite allows one process per data directory: ask the restarted server, page by page.
  let total = 0;
  let before: string | null = null;
  do {
    const query: string = `limit=100${before ? `&before=${encodeURIComponent(before)}` : ''}`;
    const response = await fetch(`http://127.0.0.1:${server!.port}/inspect/${routeId}?${query}`, { headers: { accept: 'application/json' } });
    if (!response.ok) throw new Error(`GET /inspect/${routeId} answered ${response.status}`);
    const page = (await response.json()) as { items: unknown[]; next: string | null };
    total += page.items.length;
    before = page.next;
  } while (before);
  return total;
}
