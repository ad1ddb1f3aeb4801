import { spawn } from 'node:child_process';
import { ROOT } from '../support/template.js';

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Wall time from spawn to exit. */
  ms: number;
}

/**
 * Runs a TypeScript entry point of this repository (`src/main.ts`, a script) as its own process, the
 * way `npm start` does, with exactly `env` on top of PATH: no DATABASE_URL or NODE_OPTIONS leak in
 * from the test run. A child still running after `timeoutMs` is killed and the test sees signal SIGKILL.
 */
export function runChild(entry: string, args: string[], env: Record<string, string>, timeoutMs = 15_000): Promise<ChildResult> {
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}
