/**
 * The full server as the hot-path benches run it: compiled, as `npm start` ships it (swc,
 * scripts/build.mjs), from a private build under node_modules/.cache so the shared dist/ is left
 * alone. Under tsx every closure the server makes per request also pays esbuild's keepNames
 * `__name` call, which the build has not: a bench of the sources prices a cost production never pays.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('../', import.meta.url).pathname;

/** Builds the server into a new directory (the caller removes it) and answers its path. */
export function buildServer(): string {
  const cache = join(ROOT, 'node_modules/.cache');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, 'cfs-bench-build-'));
  console.log(`building the server into ${dir}`);
  execFileSync(process.execPath, ['scripts/build.mjs', '--out', dir], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  return dir;
}

/**
 * The node arguments that start the build in `dir` (after any of node's own flags, e.g. --cpu-prof):
 * it prints `listening <port>` once bound to 127.0.0.1 and closes gracefully on SIGTERM (the store
 * closed, a profile written).
 */
export function compiledServerArgs(dir: string): string[] {
  const source = `
    const [dir] = process.argv.slice(1);
    const { build } = await import(dir + '/src/server/build.js');
    const { loadConfig } = await import(dir + '/src/config.js');
    const app = await build(loadConfig());
    const port = await app.listen(0, '127.0.0.1');
    process.stdout.write('listening ' + port + '\\n');
    process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
  `;
  return ['--input-type=module', '-e', source, dir];
}
