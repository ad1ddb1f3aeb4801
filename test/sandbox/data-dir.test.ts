import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../../src/server/paths.js';
import { sandboxDataDir, scratchParent, sweepStaleScratch } from '../../src/sandbox/data-dir.js';
import { budget } from '../support/budget.js';

/**
 * The sandbox's store directory (src/sandbox/data-dir.ts): in /dev/shm when it has room, else the OS
 * temp directory; private; gone when the process exits, however it exits.
 */
const run = promisify(execFile);
let parent: string;
beforeEach(() => {
  parent = mkdtempSync(join(tmpdir(), 'cfs-sandbox-scratch-'));
});
afterEach(() => rmSync(parent, { recursive: true, force: true }));

test('it goes to /dev/shm when that has room, else to the OS temp directory', () => {
  expect(scratchParent(join(parent, 'no-such-dir'))).toBe(tmpdir());
  expect(scratchParent(parent, Number.MAX_SAFE_INTEGER)).toBe(tmpdir());
  expect(scratchParent(parent, 1)).toBe(parent);
});

test('the scratch directory is private to this user, and the data directory is left for the store to make', () => {
  const scratch = sandboxDataDir(parent);
  try {
    const [made] = readdirSync(parent);
    expect(made).toMatch(/^cfs-server-sandbox-/);
    expect(statSync(join(parent, made!)).mode & 0o777).toBe(0o700);
    expect(scratch.dataDir).toBe(join(parent, made!, 'data'));
    expect(existsSync(scratch.dataDir)).toBe(false);
  } finally {
    scratch.remove();
  }
  expect(readdirSync(parent)).toEqual([]);
});

test.each([
  ['a normal end', ''],
  ['process.exit(1) (a start that failed)', 'process.exit(1);'],
  ['an uncaught exception', 'throw new Error("boom");'],
])(
  'the scratch directory is removed at %s',
  async (_name, ending) => {
    const source = `
      const { sandboxDataDir } = await import(${JSON.stringify(join(ROOT, 'src/sandbox/data-dir.ts'))});
      const { mkdirSync, writeFileSync } = await import('node:fs');
      const { dataDir } = sandboxDataDir(${JSON.stringify(parent)});
      mkdirSync(dataDir);
      writeFileSync(dataDir + '/PG_VERSION', '17');
      ${ending}`;
    await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], { env: { ...process.env, NODE_OPTIONS: '' } }).catch(() => undefined);
    expect(readdirSync(parent)).toEqual([]);
  },
  budget(30_000),
);

test(
  "a sandbox killed with SIGKILL leaves its scratch directory, and the next start removes it; a live owner's and an unowned one stay",
  async () => {
    const source = `
      const { sandboxDataDir } = await import(${JSON.stringify(join(ROOT, 'src/sandbox/data-dir.ts'))});
      const { mkdirSync } = await import('node:fs');
      const { dataDir } = sandboxDataDir(${JSON.stringify(parent)});
      mkdirSync(dataDir);
      process.stdout.write('made\\n');
      setInterval(() => undefined, 1000);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], {
      env: { ...process.env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('made') && resolve());
      child.once('exit', (code) => reject(new Error(`the child exited (${code}) before making its directory`)));
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const [killed] = readdirSync(parent);
    expect(killed).toMatch(/^cfs-server-sandbox-/);
    // Another sandbox that is alive (this process), and a directory being made (no owner file yet).
    mkdirSync(join(parent, 'cfs-server-sandbox-live'));
    writeFileSync(join(parent, 'cfs-server-sandbox-live', 'owner.pid'), String(process.pid));
    mkdirSync(join(parent, 'cfs-server-sandbox-unowned'));
    const next = sandboxDataDir(parent);
    try {
      const left = readdirSync(parent);
      expect(left).not.toContain(killed);
      expect(left).toEqual(expect.arrayContaining(['cfs-server-sandbox-live', 'cfs-server-sandbox-unowned']));
      expect(left).toHaveLength(3);
      expect(sweepStaleScratch(parent)).toEqual([]);
    } finally {
      next.remove();
    }
  },
  budget(30_000),
);
