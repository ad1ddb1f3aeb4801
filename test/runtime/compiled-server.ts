import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../support/template.js';

/**
 * The compiled server as `npm start` runs it (`node dist/src/main.js`), built into a temporary
 * directory laid out like the repository (the shared `dist/` is left alone: other work may be
 * running it). Building takes ~1-2 s; a TypeScript loader would add ~80 MB and seconds per start.
 */
export interface CompiledServer {
  main: string;
  /** bin/cfs-server.js of the build (a copy: Node runs a linked entry script from its real path, whose ../dist is the checkout's). */
  bin: string;
  remove(): void;
}

export async function buildServer(): Promise<CompiledServer> {
  const app = mkdtempSync(join(tmpdir(), 'cfs-compiled-'));
  await promisify(execFile)(process.execPath, [join(ROOT, 'scripts/build.mjs'), '--out', join(app, 'dist')], { cwd: ROOT });
  for (const entry of ['contracts', 'docs', 'node_modules', 'package.json']) symlinkSync(join(ROOT, entry), join(app, entry));
  cpSync(join(ROOT, 'bin'), join(app, 'bin'), { recursive: true });
  return { main: join(app, 'dist/src/main.js'), bin: join(app, 'bin/cfs-server.js'), remove: () => rmSync(app, { recursive: true, force: true }) };
}

/** Spawns the compiled server with exactly `env` on top of PATH (no DATABASE_URL or NODE_OPTIONS leak in). */
export function spawnServer(main: string, env: Record<string, string>, args: string[] = []): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [main, ...args], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Collects a child's stdout and stderr, and answers the port of its first `listening` log line. */
export function watch(child: ChildProcessWithoutNullStreams): {
  output(): string;
  errors(): string;
  listening: Promise<number>;
  exited: Promise<number | null>;
} {
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const listening = new Promise<number>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = /"port":(\d+)[^\n]*"msg":"listening"/.exec(stdout);
      if (match) resolve(Number(match[1]));
    });
    void exited.then((code) => reject(new Error(`exited with ${code} before listening: ${stderr}`)));
  });
  listening.catch(() => undefined);
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return { output: () => stdout, errors: () => stderr, listening, exited };
}
