import { accessSync, constants, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive } from '../store/data-dir-lock.js';

/**
 * The sandbox's store lives in a private scratch directory made for one start (issue 32: ready in
 * under 2 s): the kept seed or the template is unpacked there and PGlite opens it like a restart,
 * where loading the same archive into an in-memory PGlite (`loadDataDir`) took most of the start.
 * /dev/shm keeps it in memory as `memory://` did; the OS temp directory is the fallback.
 */
export interface SandboxDataDir {
  /** The data directory to open (inside the scratch directory; it does not exist yet). */
  dataDir: string;
  /** Removes the scratch directory; safe to call more than once. Also run when the process exits. */
  remove(): void;
}

/** Room /dev/shm must have for the sandbox to use it: the seeded store (~45 MB) and what a client adds. */
const SHM_MIN_FREE_BYTES = 256 * 1024 * 1024;

/** Where the scratch directory goes: /dev/shm when it exists, is writable and has room, else the OS temp directory. */
export function scratchParent(shm = '/dev/shm', minFreeBytes = SHM_MIN_FREE_BYTES): string {
  try {
    if (!existsSync(shm)) return tmpdir();
    accessSync(shm, constants.W_OK);
    const stats = statfsSync(shm);
    return stats.bavail * stats.bsize >= minFreeBytes ? shm : tmpdir();
  } catch {
    return tmpdir();
  }
}

const PREFIX = 'cfs-server-sandbox-';
/** The file in a scratch directory naming the process that made it. */
const OWNER = 'owner.pid';

/**
 * Removes the scratch directories that sandboxes killed without an exit handler (SIGKILL, the OOM
 * killer, a power cut) left in `parent`: those whose owner process is gone. A directory with no owner
 * file yet is being made right now, or predates the owner file; it is left alone. Returns the names removed.
 */
export function sweepStaleScratch(parent: string): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(parent).filter((name) => name.startsWith(PREFIX));
  } catch {
    return removed;
  }
  for (const name of names) {
    let pid: number;
    try {
      pid = Number(readFileSync(join(parent, name, OWNER), 'utf8'));
    } catch {
      continue;
    }
    if (!Number.isSafeInteger(pid) || pid <= 0 || isAlive(pid)) continue;
    rmSync(join(parent, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

/**
 * Makes the scratch directory (0700, as mkdtemp makes it) and removes it when the process exits,
 * however it exits (a start that fails, a signal the caller turns into process.exit, the end). What a
 * killed sandbox left in the same parent goes first (sweepStaleScratch).
 */
export function sandboxDataDir(parent = scratchParent()): SandboxDataDir {
  sweepStaleScratch(parent);
  const scratch = mkdtempSync(join(parent, PREFIX));
  writeFileSync(join(scratch, OWNER), String(process.pid), { mode: 0o600 });
  const remove = () => rmSync(scratch, { recursive: true, force: true });
  process.once('exit', remove);
  return { dataDir: join(scratch, 'data'), remove };
}
