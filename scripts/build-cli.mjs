// The `cfs` bundle: src/cli/main.ts and everything it imports (our code, the generated protos, the
// packages) as one ES module, dist/src/cli/cfs.js, so a call loads one file instead of ~250 (Node's
// ES-module loader costs ~0.3 ms of CPU per file, and tsx compiling the sources took 3-4 s per call).
// `npm run build` writes it (scripts/build.mjs); bin/cfs.js rebuilds it in a checkout when a source
// it was built from changed since (dist/src/cli/cfs.inputs.json lists them). Plain JavaScript so it
// runs without tsx.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Builds the bundle into `<out>/src/cli/cfs.js` (out: the dist directory) with its list of inputs. */
export async function buildCli(out = join(ROOT, 'dist')) {
  const outfile = join(out, 'src/cli/cfs.js');
  mkdirSync(dirname(outfile), { recursive: true });
  // Written beside and renamed into place: a cfs started meanwhile reads the old bundle or the new, never half of one.
  const temporary = `${outfile}.${process.pid}.tmp.js`;
  const result = await build({
    entryPoints: [join(ROOT, 'src/cli/main.ts')],
    outfile: temporary,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // CommonJS code inside the bundle may require() Node's modules.
    banner: { js: "import { createRequire as __cfsCreateRequire } from 'node:module'; const require = __cfsCreateRequire(import.meta.url);" },
    // A linked map (stack traces with --enable-source-maps) and whitespace/syntax minified: less to
    // read and parse at every call; identifiers are kept, so traces stay legible without the map.
    sourcemap: 'linked',
    sourcesContent: false,
    minifyWhitespace: true,
    minifySyntax: true,
    metafile: true,
    logLevel: 'error',
  });
  renameSync(`${temporary}.map`, `${outfile}.map`);
  // The map is named after the temporary file in the bundle's last line; point it at its final name.
  const code = readFileSync(temporary, 'utf8');
  writeFileSync(temporary, code.replace(/sourceMappingURL=\S+\s*$/, `sourceMappingURL=${basename(outfile)}.map\n`));
  renameSync(temporary, outfile);
  const inputs = Object.keys(result.metafile.inputs)
    .map((input) => resolve(ROOT, input))
    .filter((path) => !path.includes(`${'/'}node_modules${'/'}`))
    .map((path) => relative(ROOT, path));
  writeFileSync(join(out, 'src/cli/cfs.inputs.json'), `${JSON.stringify(inputs)}\n`);
  return outfile;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outFlag = process.argv.indexOf('--out');
  const started = performance.now();
  const file = await buildCli(outFlag > 0 && process.argv[outFlag + 1] ? resolve(process.argv[outFlag + 1]) : undefined);
  console.log(`built ${relative(ROOT, file)} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
