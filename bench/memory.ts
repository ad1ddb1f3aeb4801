/**
 * `npm run bench:memory`: the resident memory (RSS) of the compiled server (`node dist/src/main.js`,
 * what `npm start` and the container run) once it is idle after start, migrations and one request of
 * each API family (users REST, cloud Connect, publishing REST + GraphQL, webhook capture + inspector).
 * Measured on PGlite twice — the first start on an empty DATA_DIR (initdb) and a restart on it — and
 * on PostgreSQL (a scratch database on DATABASE_URL's server, or on
 * postgres://postgres@127.0.0.1:5432/postgres when that answers). Prints idle RSS and peak RSS
 * (VmHWM) per run; exits 1 when an embedded (PGlite) idle RSS is above the target (250 MB).
 * `BENCH_MAIN` runs another entry file (e.g. a build in a temporary directory).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scratchDatabase } from '../scripts/support/fresh-store.js';

const ROOT = new URL('../', import.meta.url).pathname;
const MAIN = process.env.BENCH_MAIN ?? join(ROOT, 'dist/src/main.js');
const TARGET_MB = 250;
/** How long the server is left alone after the last request before RSS is read. */
const SETTLE_MS = 3000;
const GIVE_UP_MS = 120_000;
const SUPERUSER = { email: 'bench@example.com', password: 'bench-password' };

if (!existsSync(MAIN)) {
  console.error(`bench:memory runs the compiled server (${MAIN}): npm run build first`);
  process.exit(2);
}

/** VmRSS and VmHWM (peak) of a process, in MB, from /proc (Linux). */
function memoryOf(pid: number): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
}

async function call(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] ??= 'application/json';
  const response = await fetch(`${base}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await response.text();
  const body: unknown = /json/.test(response.headers.get('content-type') ?? '') && text ? JSON.parse(text) : text;
  if (response.status >= 400) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  return { status: response.status, body };
}

/** One request (or the few a family needs to reach a real answer) of each API family. */
async function exerciseEveryFamily(base: string): Promise<void> {
  // Users REST: the first sign-in creates the admin.
  const signIn = (await call(base, 'POST', '/api/auth', { body: { name: 'bench-admin', password: 'bench-password' } })).body as {
    accessToken: string;
    user: { id: string };
  };
  await call(base, 'GET', `/api/users/${signIn.user.id}`, { token: signIn.accessToken });
  // Cloud API over Connect (JSON): the default project, then its instances.
  const projects = (await call(base, 'POST', '/cloud.iam.v1.ProjectService/List', { token: signIn.accessToken, body: {} })).body as {
    items?: Array<{ metadata: { id: string } }>;
  };
  const project = projects.items?.[0]?.metadata.id;
  if (!project) throw new Error('no default project');
  await call(base, 'POST', '/cloud.compute.v1.InstanceService/List', { token: signIn.accessToken, body: { parentId: project } });
  // Publishing REST and GraphQL.
  const login = (await call(base, 'POST', '/v1/writers/login', { body: SUPERUSER })).body as { accessToken: string };
  await call(base, 'GET', '/v1/articles');
  await call(base, 'POST', '/graphql', { token: login.accessToken, body: { query: '{ me { _id } topics { total } }' } });
  // Webhooks: a route, one capture, the inspector's JSON.
  const route = (await call(base, 'POST', '/routes', { body: {} })).body as { routeId: string };
  await call(base, 'POST', `/${route.routeId}/hook`, { body: { event: 'push' } });
  await call(base, 'GET', `/inspect/${route.routeId}`, { headers: { accept: 'application/json' } });
}

interface Measured {
  idleMb: number;
  peakMb: number;
}

/** Starts the server on a free port, waits for readiness, exercises it, lets it settle, reads its RSS, stops it. */
async function measure(env: NodeJS.ProcessEnv): Promise<Measured> {
  const child = spawn(process.execPath, [MAIN], {
    env: { ...env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`not listening after ${GIVE_UP_MS} ms`)), GIVE_UP_MS);
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const match = /"port":(\d+)[^\n]*"msg":"listening"/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
      void exited.then((code) => reject(new Error(`the server exited with ${code} before listening`)));
    });
    // Keep draining the log so the server never blocks on a full pipe.
    child.stdout.resume();
    await exerciseEveryFamily(`http://127.0.0.1:${port}`);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const { rssMb, peakMb } = memoryOf(child.pid!);
    return { idleMb: rssMb, peakMb };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

function report(name: string, result: Measured, target?: number): boolean {
  const ok = target === undefined || result.idleMb <= target;
  const verdict = target === undefined ? '' : ` — target <= ${target} MB: ${ok ? 'ok' : 'MISSED'}`;
  console.log(`${name.padEnd(28)} idle RSS ${result.idleMb.toFixed(0).padStart(4)} MB, peak ${result.peakMb.toFixed(0).padStart(4)} MB${verdict}`);
  return ok;
}

const baseEnv: NodeJS.ProcessEnv = { ...process.env };
delete baseEnv.DATABASE_URL;
delete baseEnv.NODE_OPTIONS;
let allOk = true;

const scratch = mkdtempSync(join(tmpdir(), 'bench-memory-'));
try {
  const env = { ...baseEnv, DATA_DIR: join(scratch, 'data') };
  allOk = report('pglite, first start (initdb)', await measure(env), TARGET_MB) && allOk;
  allOk = report('pglite, restart', await measure(env), TARGET_MB) && allOk;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database = await scratchDatabase(adminUrl, 'bench_memory').catch((error: unknown) => {
  console.log(`postgresql skipped: ${adminUrl} did not answer (${error instanceof Error ? error.message : String(error)}); set DATABASE_URL`);
  return undefined;
});
if (database) {
  try {
    report('postgresql', await measure({ ...baseEnv, DATABASE_URL: database.url }));
  } finally {
    await database.drop();
  }
}
process.exit(allOk ? 0 : 1);
