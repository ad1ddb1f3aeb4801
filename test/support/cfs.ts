import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../../src/server/paths.js';

export interface CfsResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the `cfs` CLI (bin/cfs.js) as a child process in `cwd` with exactly `env` (plus PATH), so no
 * profile or variable of the machine leaks in; answers its exit code and output, failed or not.
 */
export function runCfs(args: string[], cwd: string, env: Record<string, string>): Promise<CfsResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, 'bin/cfs.js'), ...args], { cwd, env: { PATH: process.env.PATH ?? '', ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}
