import { jest } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { openDatabase } from '../../src/store/database.js';
import { LOCK_FILE } from '../../src/store/data-dir-lock.js';
import { pgliteTemplatePath, ROOT } from '../support/template.js';
import { runChild, spawnChild, type ChildOptions, type ChildResult } from './startup-child.js';
import { budget } from '../support/budget.js';

/**
 * Each bad setting, given to a real `node --import tsx src/main.ts`: one line on stderr naming the
 * setting, a non-zero exit, in bounded time. The children that fail before opening a database run
 * side by side; the ones that need a working store use one DATA_DIR loaded from the template.
 */
// Child processes that load TypeScript and a database: slow on a busy machine, never unbounded.
jest.setTimeout(budget(40_000));
const root = mkdtempSync(join(tmpdir(), 'cfs-startup-'));
const servers: Server[] = [];
const sockets: Socket[] = [];
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  if (nobody.ok) unbind(nobody.cwd);
  rmSync(root, { recursive: true, force: true });
});

async function listening(onConnection: (socket: Socket) => void = () => undefined): Promise<number> {
  const server = createServer((socket) => {
    sockets.push(socket);
    onConnection(socket);
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}

async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}

// The point is "exits by itself, no hang": bounds scaled to the machine's load (a cold tsx start of
// the server takes up to ~10 s quiet), and the child is killed only well after them. PORT 0 unless a
// case names one: the port is checked before the store opens, and these children start side by side
// (on a fixed port they would find each other's check in the way).
const FAIL_FAST_MS = budget(15_000);
const main = (env: Record<string, string>, options: ChildOptions = {}) =>
  runChild('src/main.ts', [], { HOST: '127.0.0.1', PORT: '0', ...env }, { timeoutMs: FAIL_FAST_MS * 2, ...options });

function expectOneLine(result: ChildResult, line: string | RegExp, maxMs: number): void {
  expect({ code: result.code, signal: result.signal }).toEqual({ code: 1, signal: null });
  const lines = result.stderr.split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  if (typeof line === 'string') expect(lines[0]).toBe(line);
  else expect(lines[0]).toMatch(line);
  expect(result.ms).toBeLessThan(maxMs);
}

const pgUrl = process.env.DATABASE_URL;
const runningAsRoot = process.getuid?.() === 0;
if (runningAsRoot) chmodSync(root, 0o755); // so that nobody reaches it

/**
 * Where nobody (uid 65534) runs the server from. The checkout may sit in a private directory (a
 * `mktemp -d`, a home directory of mode 0700) that nobody cannot traverse to reach src/ and
 * node_modules; so, as root, the checkout is bind-mounted inside `root` (world-traversable) and
 * nobody's children run from there: the same files, no copy.
 */
const NOBODY = { uid: 65534, gid: 65534 };
const nobody = runningAsRoot ? bindCheckout() : ({ ok: false, reason: 'not running as root' } as const);

function bindCheckout(): { ok: true; cwd: string } | { ok: false; reason: string } {
  const cwd = join(root, 'checkout');
  mkdirSync(cwd);
  try {
    execFileSync('mount', ['--bind', ROOT, cwd], { stdio: 'pipe' });
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message.split('\n')[0]! : String(error) };
  }
  try {
    // nobody must reach the files and node there (a node under /root, say, it cannot run).
    execFileSync(process.execPath, ['-e', 'require.resolve("tsx")'], { cwd, uid: NOBODY.uid, gid: NOBODY.gid, stdio: 'pipe' });
    return { ok: true, cwd };
  } catch (error) {
    unbind(cwd);
    return {
      ok: false,
      reason: `nobody cannot run ${process.execPath} on the checkout: ${error instanceof Error ? error.message.split('\n')[0]! : String(error)}`,
    };
  }
}

function unbind(cwd: string): void {
  try {
    execFileSync('umount', [cwd], { stdio: 'pipe' });
  } catch {
    execFileSync('umount', ['-l', cwd], { stdio: 'pipe' });
  }
}
if (runningAsRoot && !nobody.ok) console.warn(`startup tests run as nobody skipped: ${nobody.reason}`);

describe('a start that cannot open its store', () => {
  const results = new Map<string, Promise<ChildResult>>();
  let refused = 0;
  let blackHole = 0;
  const fileDataDir = join(root, 'a-file');
  const readOnlyDataDir = join(root, 'read-only');
  const heldDataDir = join(root, 'held');
  const foreignDataDir = join(root, 'foreign');
  beforeAll(async () => {
    refused = await closedPort();
    blackHole = await listening(); // accepts and never answers
    writeFileSync(fileDataDir, 'not a directory');
    mkdirSync(readOnlyDataDir, { mode: 0o500 });
    mkdirSync(heldDataDir, { mode: 0o700 });
    writeFileSync(join(heldDataDir, LOCK_FILE), `${process.pid}\n`);
    // A refused connect is answered at once, but a child whose event loop is busier than the connect
    // timeout (module loading on a loaded machine) would see its timer first: it gets as long as the test.
    results.set(
      'refused',
      main({
        DATABASE_URL: `postgres://app:secret@127.0.0.1:${refused}/app`,
        DB_CONNECT_TIMEOUT_MS: String(Math.min(FAIL_FAST_MS, 600_000)),
        STARTUP_TIMEOUT_MS: String(Math.min(FAIL_FAST_MS, 600_000)),
      }),
    );
    results.set('black hole', main({ DATABASE_URL: `postgres://app@127.0.0.1:${blackHole}/app`, STARTUP_TIMEOUT_MS: '1500' }));
    results.set('file', main({ DATA_DIR: fileDataDir }));
    // Root writes anywhere: the read-only case runs as nobody then.
    if (!runningAsRoot) results.set('read-only', main({ DATA_DIR: readOnlyDataDir }));
    else if (nobody.ok) results.set('read-only', main({ DATA_DIR: readOnlyDataDir }, { ...NOBODY, cwd: nobody.cwd }));
    results.set('held', main({ DATA_DIR: heldDataDir }));
    if (nobody.ok) {
      // Open to everyone and owned by root: nobody may write in it but cannot chmod it.
      mkdirSync(foreignDataDir);
      chmodSync(foreignDataDir, 0o777);
      results.set('foreign', main({ DATA_DIR: foreignDataDir }, { ...NOBODY, cwd: nobody.cwd }));
    }
    if (pgUrl) {
      const missing = new URL(pgUrl);
      missing.pathname = '/cfs_no_such_database';
      results.set('missing', main({ DATABASE_URL: missing.toString() }));
    }
  });
  const result = (name: string) => results.get(name) ?? Promise.reject(new Error(`no child ${name}`));

  test('DATABASE_URL refusing connections: one line naming DATABASE_URL, password hidden', async () => {
    expectOneLine(
      await result('refused'),
      `cannot start: DATABASE_URL postgres://app:***@127.0.0.1:${refused}/app: connection refused (is PostgreSQL running and listening there?)`,
      FAIL_FAST_MS,
    );
  });

  test('DATABASE_URL that accepts and never answers: gives up after STARTUP_TIMEOUT_MS', async () => {
    const outcome = await result('black hole');
    expectOneLine(
      outcome,
      `cannot start: DATABASE_URL postgres://app@127.0.0.1:${blackHole}/app: the database did not answer within 1.5 s (STARTUP_TIMEOUT_MS)`,
      FAIL_FAST_MS,
    );
    expect(outcome.ms).toBeGreaterThanOrEqual(1500);
  });

  (pgUrl ? test : test.skip)('DATABASE_URL naming a database that does not exist', async () => {
    expectOneLine(
      await result('missing'),
      /^cannot start: DATABASE_URL .*\/cfs_no_such_database: database "cfs_no_such_database" does not exist \(create it, or point DATABASE_URL at an existing database\)$/,
      FAIL_FAST_MS,
    );
  });

  test('DATA_DIR that is a file', async () => {
    expectOneLine(await result('file'), `cannot start: DATA_DIR ${fileDataDir} is not a directory (a file is in the way)`, FAIL_FAST_MS);
  });

  (!runningAsRoot || nobody.ok ? test : test.skip)('DATA_DIR this process cannot write', async () => {
    expectOneLine(
      await result('read-only'),
      `cannot start: DATA_DIR ${readOnlyDataDir} is not writable by this process: permission denied (EACCES)`,
      FAIL_FAST_MS,
    );
  });

  (nobody.ok ? test : test.skip)('DATA_DIR open to other users that this user cannot make private (another owner)', async () => {
    expectOneLine(
      await result('foreign'),
      `cannot start: DATA_DIR ${foreignDataDir} is open to other users (mode 777) and cannot be made private: operation not permitted (EPERM); run chmod 700 on it as its owner`,
      FAIL_FAST_MS,
    );
  });

  test('DATA_DIR held by another running process', async () => {
    expectOneLine(
      await result('held'),
      `cannot start: DATA_DIR ${heldDataDir} is in use by process ${process.pid} (lock ${join(heldDataDir, LOCK_FILE)}): the embedded database allows one process at a time; stop it, or use DATABASE_URL for several processes`,
      FAIL_FAST_MS,
    );
  });
});

// The cases below start a working server on a DATA_DIR loaded from the migrated template.
// A run on PostgreSQL prepares no PGlite template: these are skipped there.
const describeWithPglite = existsSync(pgliteTemplatePath()) ? describe : describe.skip;

describeWithPglite('a server on a working store', () => {
  const dataDir = join(root, 'data');
  beforeAll(async () => {
    const db = await openDatabase({ dataDir, loadDataDir: new Blob([readFileSync(pgliteTemplatePath())]) });
    await db.close();
  });

  test('PORT already in use: one line naming PORT, and the DATA_DIR lock is released', async () => {
    const port = await listening();
    expectOneLine(
      await main({ DATA_DIR: dataDir, PORT: String(port), MIGRATE: 'false' }),
      `cannot start: PORT ${port} is already in use (HOST 127.0.0.1): stop the other server or choose another PORT`,
      FAIL_FAST_MS,
    );
    expect(() => readFileSync(join(dataDir, LOCK_FILE))).toThrow(/ENOENT/);
  });

  test('an unhandled rejection is logged and the server keeps serving; an uncaught exception is logged as fatal and the server shuts down with exit code 1', async () => {
    const child = spawnChild(
      'src/main.ts',
      [],
      { DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', MIGRATE: 'false', LOG_LEVEL: 'info' },
      { preload: ['./test/hardening/startup-fault-preload.ts'] },
    );
    child.stdin.end();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stderr })));
    const timer = setTimeout(() => child.kill('SIGKILL'), FAIL_FAST_MS * 2);
    const lines: LogLine[] = [];
    const waiters: Array<() => void> = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(JSON.parse(line) as LogLine);
      for (const wake of waiters.splice(0)) wake();
    });
    const logged = async (msg: string): Promise<LogLine> => {
      for (;;) {
        const found = lines.find((line) => line.msg === msg);
        if (found) return found;
        const next = new Promise<void>((resolve) => waiters.push(resolve));
        await Promise.race([next, exited.then(({ code }) => Promise.reject(new Error(`exited (${code}) before logging "${msg}": ${stderr}`)))]);
      }
    };
    try {
      const { port } = await logged('listening');
      const rejection = await logged('unhandled promise rejection');
      expect(rejection).toMatchObject({ level: 50, err: { message: 'stray rejection planted by the test' } });
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);

      child.kill('SIGUSR2');
      const exception = await logged('uncaught exception; shutting down');
      expect(exception).toMatchObject({ level: 60, err: { message: 'uncaught exception planted by the test' } });
      expect(await exited).toEqual({ code: 1, stderr: '' });
      expect(lines.map((line) => line.msg)).toContain('shutting down');
    } finally {
      clearTimeout(timer);
      child.kill('SIGKILL');
    }
  });
});

interface LogLine {
  msg?: string;
  level?: number;
  port?: number;
  err?: { message?: string };
}
