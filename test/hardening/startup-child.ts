import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { ROOT } from '../support/template.js';

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Wall time from spawn to exit. */
  ms: number;
}

export interface ChildOptions {
  /** Killed with SIGKILL after this (the test then sees signal SIGKILL). */
  timeoutMs?: number;
  /** Run as another user (only when the tests run as root). */
  uid?: number;
  gid?: number;
  /** Extra `--import` modules loaded after tsx. */
  preload?: string[];
  /** The checkout to run from (default: this one); another path to the same files, for another user. */
  cwd?: string;
}

/**
 * Starts a TypeScript entry point of this repository (`src/main.ts`, a script) as its own process,
 * the way `npm start` does, with exactly `env` on top of PATH: no DATABASE_URL or NODE_OPTIONS leak
 * in from the test run.
 */
export function spawnChild(entry: string, args: string[], env: Record<string, string>, options: ChildOptions = {}): ChildProcessWithoutNullStreams {
  const imports = ['tsx', ...(options.preload ?? [])].flatMap((module) => ['--import', module]);
  return spawn(process.execPath, [...imports, entry, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
    uid: options.uid,
    gid: options.gid,
  });
}

/** Runs a child to its end (see spawnChild) and collects its output. */
export function runChild(entry: string, args: string[], env: Record<string, string>, options: ChildOptions = {}): Promise<ChildResult> {
  const started = Date.now();
  const child = spawnChild(entry, args, env, options);
  child.stdin.end();
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 15_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}
