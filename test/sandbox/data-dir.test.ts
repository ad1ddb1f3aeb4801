import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../../src/server/paths.js';
import { sandboxDataDir, scratchParent } from '../../src/sandbox/data-dir.js';
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
