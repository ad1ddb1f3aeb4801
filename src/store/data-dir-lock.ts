import { randomBytes } from 'node:crypto';
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * A problem with `DATA_DIR` that stops the embedded database from opening. The message names the
 * setting and says what to do, so the entry point can print it as is.
 */
export class DataDirError extends Error {
  override name = 'DataDirError';
}

/** The lock file inside `DATA_DIR`; it holds the pid of the process that has the directory open. */
export const LOCK_FILE = 'cfs.lock';

/** Directories this process has locked (by real path): a second open in the same process is refused too. */
const held = new Set<string>();

export interface DataDirLock {
  /** Removes the lock file if it is still ours. Safe to call more than once. */
  release(): void;
}

/**
 * `mkdir -p`, one level at a time: Node's `mkdirSync(…, {recursive: true})` never returns for a path
 * under /proc (it retries the same ENOENT forever, synchronously), and so the start hung past
 * STARTUP_TIMEOUT_MS with no word. An existing entry is left for the caller to check.
 */
function makeDirectories(dir: string, mode: number): void {
  try {
    mkdirSync(dir, { mode });
  } catch (error) {
    const code = errorCode(error);
    if (code === 'EEXIST') return;
    const parent = dirname(dir);
    if (code !== 'ENOENT' || parent === dir) throw error;
    makeDirectories(parent, mode);
    mkdirSync(dir, { mode });
  }
}

/**
 * Creates `DATA_DIR` private to this user (0700): it holds the database, and with it the token
 * signing keys, and PGlite writes its files world-readable (0666), so the directory's mode is what
 * keeps other users out. An existing directory open to others (earlier versions made it 0755) is
 * tightened to 0700 rather than refused, so an upgrade just works; when that is not possible (another
 * owner, read-only file system) the start is refused with what to do.
 */
export function preparePrivateDataDir(dataDir: string): void {
  try {
    makeDirectories(dataDir, 0o700);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'EEXIST' || code === 'ENOTDIR') throw new DataDirError(`DATA_DIR ${dataDir} is not a directory (a file is in the way)`);
    throw new DataDirError(`DATA_DIR ${dataDir} cannot be created: ${reason(error)}`);
  }
  const stats = statSync(dataDir);
  if (!stats.isDirectory()) throw new DataDirError(`DATA_DIR ${dataDir} is not a directory (a file is in the way)`);
  try {
    accessSync(dataDir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new DataDirError(`DATA_DIR ${dataDir} is not writable by this process: ${reason(error)}`);
  }
  if ((stats.mode & 0o077) !== 0) {
    try {
      chmodSync(dataDir, 0o700);
    } catch (error) {
      const mode = (stats.mode & 0o777).toString(8);
      throw new DataDirError(
        `DATA_DIR ${dataDir} is open to other users (mode ${mode}) and cannot be made private: ${reason(error)}; run chmod 700 on it as its owner`,
      );
    }
  }
}

/**
 * Takes the exclusive lock on `DATA_DIR`: PGlite is one process's database, and a second process on
 * the same files (a second `npm start`, the create-superuser script while the server runs) silently
 * loses writes. The lock is a file created with O_EXCL holding the pid; a lock whose pid is no longer
 * alive (a crash, kill -9, or a container restart that reuses our own pid) is taken over. No native
 * dependency and no flock, so it behaves the same on every platform Node runs on.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const key = realpathSync(dataDir);
  const path = join(dataDir, LOCK_FILE);
  if (held.has(key)) throw inUse(dataDir, path, process.pid);
  // A few rounds: each round either creates the lock, finds a live owner, or removes one stale lock.
  for (let attempt = 0; attempt < 5; attempt++) {
    if (tryCreate(path)) {
      held.add(key);
      return lockHandle(key, path);
    }
    const owner = readPid(path);
    if (owner === undefined) continue; // removed between our create and read: try again
    if (owner !== process.pid && isAlive(owner)) throw inUse(dataDir, path, owner);
    removeStale(path, owner);
  }
  throw new DataDirError(`DATA_DIR ${dataDir} could not be locked: ${path} keeps changing; is another process starting on it?`);
}

function lockHandle(key: string, path: string): DataDirLock {
  // process.exit() (a failed start, a signal) skips every finally block: remove the lock then too.
  const onExit = () => release();
  const release = () => {
    if (!held.delete(key)) return;
    process.off('exit', onExit);
    if (readPid(path) === process.pid) {
      try {
        unlinkSync(path);
      } catch {
        // Already gone: nothing to release.
      }
    }
  };
  process.on('exit', onExit);
  return { release };
}

function tryCreate(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false;
    throw new DataDirError(`DATA_DIR lock ${path} cannot be created: ${reason(error)}`);
  }
  try {
    writeSync(fd, `${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Removes a lock whose owner is gone. Two processes may find the same stale lock at once: each moves
 * it aside under a unique name (only one rename wins), and a process that moved away a lock that is
 * no longer the stale one (the other process already replaced it) puts it back with link(), which
 * never overwrites.
 */
function removeStale(path: string, stalePid: number): void {
  const aside = `${path}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(path, aside);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw new DataDirError(`DATA_DIR lock ${path} is stale (pid ${stalePid}) but cannot be removed: ${reason(error)}`);
  }
  if (readPid(aside) !== stalePid) {
    try {
      linkSync(aside, path);
    } catch {
      // Someone holds a newer lock already; theirs stands.
    }
  }
  try {
    unlinkSync(aside);
  } catch {
    // Nothing to clean.
  }
}

function readPid(path: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(text.trim());
  // A half-written or foreign file counts as a dead owner (pid 0 is never a live process to signal).
  return Number.isSafeInteger(pid) && pid > 0 ? pid : 0;
}

/** Whether a process with this pid exists (ours to signal or another user's); 0 never does. */
export function isAlive(pid: number): boolean {
  if (pid === 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return errorCode(error) === 'EPERM';
  }
}

function inUse(dataDir: string, path: string, pid: number): DataDirError {
  const who = pid === process.pid ? 'this process' : `process ${pid}`;
  return new DataDirError(
    `DATA_DIR ${dataDir} is in use by ${who} (lock ${path}): the embedded database allows one process at a time; stop it, or use DATABASE_URL for several processes`,
  );
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

const REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
};

function reason(error: unknown): string {
  const code = errorCode(error);
  if (code === undefined) return error instanceof Error ? error.message : String(error);
  return REASONS[code] ? `${REASONS[code]} (${code})` : code;
}
