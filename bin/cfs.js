#!/usr/bin/env node
// The `cfs` command-line client: runs dist/src/cli/cfs.js, the CLI compiled and bundled into one ES
// module (scripts/build-cli.mjs; `npm run build` writes it), which starts in a fraction of a second.
// In a checkout (the TypeScript sources and esbuild present), a bundle older than any source it was
// built from, or none at all, is rebuilt first (about a second), so an edit needs no manual build.
// Without a bundle and without esbuild it runs the per-file build, dist/src/cli/main.js.
import { existsSync, readFileSync, statSync } from 'node:fs';
import module from 'node:module';

// Node 22+ keeps the compiled bundle in its on-disk cache between calls (Node 20 has no such cache).
module.enableCompileCache?.();

const root = new URL('../', import.meta.url);
const bundle = new URL('dist/src/cli/cfs.js', root);

/** Whether the bundle is missing, or older than one of its inputs (dist/src/cli/cfs.inputs.json). */
function stale() {
  let built;
  try {
    built = statSync(bundle).mtimeMs;
  } catch {
    return true;
  }
  let inputs;
  try {
    inputs = JSON.parse(readFileSync(new URL('dist/src/cli/cfs.inputs.json', root), 'utf8'));
  } catch {
    return true;
  }
  return inputs.some((input) => {
    try {
      return statSync(new URL(input, root)).mtimeMs > built;
    } catch {
      return true;
    }
  });
}

if (existsSync(new URL('src/cli/main.ts', root)) && existsSync(new URL('scripts/build-cli.mjs', root)) && stale()) {
  try {
    const { buildCli } = await import('../scripts/build-cli.mjs');
    await buildCli();
  } catch (error) {
    // No esbuild (a production install of a checkout): run what is there, silently. Any other failure
    // (a read-only checkout…) is said, and the existing build runs.
    if (error?.code !== 'ERR_MODULE_NOT_FOUND')
      process.stderr.write(`cfs: could not rebuild ${bundle.pathname} (${error?.message ?? error}); running the existing build\n`);
  }
}
await import(existsSync(bundle) ? bundle.href : new URL('dist/src/cli/main.js', root).href);
