import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from '../../src/store/database.js';
import { LOCK_FILE, lockDataDir, preparePrivateDataDir } from '../../src/store/data-dir-lock.js';
import { pgliteTemplatePath } from '../support/template.js';
import { runChild } from './startup-child.js';

// The cases that open PGlite load the migrated template (no initdb). A run on PostgreSQL prepares no
// PGlite template: those cases are skipped there, the lock itself is still tested.
const template = existsSync(pgliteTemplatePath()) ? new Blob([readFileSync(pgliteTemplatePath())]) : undefined;
const describeWithPglite = template ? describe : describe.skip;
const root = mkdtempSync(join(tmpdir(), 'cfs-data-dir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let counter = 0;
const freshPath = () => join(root, `case-${++counter}`);
const open = (dataDir: string) => openDatabase({ dataDir, loadDataDir: template });
const modeOf = (path: string) => statSync(path).mode & 0o777;
const lockPid = (dataDir: string) => Number(readFileSync(join(dataDir, LOCK_FILE), 'utf8').trim());

/** The pid of a process that has exited: a lock holding it is stale. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  if (child.pid === undefined) throw new Error('no pid');
  return child.pid;
}

describeWithPglite('a DATA_DIR held open by the server', () => {
  const parent = freshPath();
  const dataDir = join(parent, 'nested');
  let db: Database | undefined;
  beforeAll(async () => {
    db = await open(dataDir);
  });
  afterAll(async () => {
    await db?.close();
  });

  test('is created 0700 with its missing parents, and locked with this pid in a 0600 file', () => {
    expect(modeOf(dataDir)).toBe(0o700);
    expect(modeOf(parent)).toBe(0o700);
    expect(lockPid(dataDir)).toBe(process.pid);
    expect(modeOf(join(dataDir, LOCK_FILE))).toBe(0o600);
  });

  test('a second open in this process is refused with a message naming DATA_DIR', async () => {
    await expect(open(dataDir)).rejects.toThrow(`DATA_DIR ${dataDir} is in use by this process`);
  });

  test('create-superuser on it exits 3 with one line naming DATA_DIR and the holder, and writes nothing', async () => {
    const result = await runChild('scripts/create-superuser.ts', ['--email', 'root@example.com', '--password', 'long-enough-1'], { DATA_DIR: dataDir });
    expect(result.code).toBe(3);
    expect(result.stderr).toBe(
      `cannot open the store: DATA_DIR ${dataDir} is in use by process ${process.pid} (lock ${join(dataDir, LOCK_FILE)}): the embedded database allows one process at a time; stop it, or use DATABASE_URL for several processes\n`,
    );
    expect(await db?.knex('publishing_users').where({ email: 'root@example.com' }).first()).toBeUndefined();
  });

  test('close removes the lock, and the directory can be locked again', async () => {
    await db?.close();
    db = undefined;
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
    lockDataDir(dataDir).release();
  });
});

test('an existing DATA_DIR open to other users (0755, as earlier versions made it) is tightened to 0700', () => {
  const dataDir = freshPath();
  mkdirSync(dataDir);
  chmodSync(dataDir, 0o755);
  preparePrivateDataDir(dataDir);
  expect(modeOf(dataDir)).toBe(0o700);
});

test('a stale lock left by a process that died is taken over', async () => {
  const dataDir = freshPath();
  mkdirSync(dataDir, { mode: 0o700 });
  writeFileSync(join(dataDir, LOCK_FILE), `${await deadPid()}\n`);
  const lock = lockDataDir(dataDir);
  expect(lockPid(dataDir)).toBe(process.pid);
  lock.release();
  expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
});

test('a lock file that holds no pid (a crash mid-write) is taken over', () => {
  const dataDir = freshPath();
  mkdirSync(dataDir, { mode: 0o700 });
  writeFileSync(join(dataDir, LOCK_FILE), '');
  const lock = lockDataDir(dataDir);
  expect(lockPid(dataDir)).toBe(process.pid);
  lock.release();
});

test('a lock held by a live process is respected, and left in place', async () => {
  const dataDir = freshPath();
  mkdirSync(dataDir, { mode: 0o700 });
  // The parent of the test runner: alive for the whole test.
  writeFileSync(join(dataDir, LOCK_FILE), `${process.ppid}\n`);
  await expect(open(dataDir)).rejects.toThrow(`DATA_DIR ${dataDir} is in use by process ${process.ppid}`);
  expect(lockPid(dataDir)).toBe(process.ppid);
});

test('a DATA_DIR that is a file is refused with a message naming DATA_DIR', async () => {
  const file = freshPath();
  writeFileSync(file, 'not a directory');
  await expect(open(file)).rejects.toThrow(`DATA_DIR ${file} is not a directory`);
});

test('a DATA_DIR that cannot be created (under /proc) is refused at once with a message naming DATA_DIR, instead of hanging', () => {
  // Node's recursive mkdirSync never returns for such a path; the start must not block on it.
  expect(() => preparePrivateDataDir('/proc/cfs-test/data')).toThrow('DATA_DIR /proc/cfs-test/data cannot be created');
});
