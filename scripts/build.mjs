// `npm run build`: compiles src/ and generated/ to dist/ (dist/src/main.js is what `npm start` and the
// container run) and copies the files the compiler does not emit. swc, not tsc: it is the very
// transform the test suite runs the sources through (@swc/jest, the same options), and it takes about
// a second where tsc takes 10–30 s here; type errors are `npm run typecheck`'s job (CI runs both).
// Plain JavaScript so it runs without tsx. dist/contracts (`npm run contracts:bundle`) is left alone.
// `--out <dir>` writes elsewhere (the runtime test builds an image-like layout in a temp directory).
// The command entries are then bundled with the packages they import (bundleEntries, below).
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { gzipSync } from 'node:zlib';
import { transformFile } from '@swc/core';
import { build as esbuild } from 'esbuild';
import { buildCli } from './build-cli.mjs';
import OpenAPISchemaValidator from 'openapi-schema-validator';
import { parse as parseYaml } from 'yaml';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const outFlag = process.argv.indexOf('--out');
const OUT = outFlag > 0 && process.argv[outFlag + 1] ? resolve(process.argv[outFlag + 1]) : join(ROOT, 'dist');
const SOURCES = ['src', 'generated'];
const ASSETS = ['src/handlers/webhook-inspector-assets'];
/**
 * The files the server serves from build-time packages (devDependencies), copied to dist/vendor/<package>/
 * with the package's licence (src/server/vendored.ts reads them there): the GraphQL explorer's
 * (src/handlers/browser-pages.ts, EXPLORER_ASSETS) and the API reference page's
 * (src/modules/contracts/contracts-module.ts). markdown-it is bundled instead (vendorMarkdownIt).
 */
const VENDORED = {
  react: ['umd/react.production.min.js'],
  'react-dom': ['umd/react-dom.production.min.js'],
  graphiql: ['graphiql.min.js', 'graphiql.min.css'],
  'swagger-ui-dist': [
    'swagger-ui-bundle.js',
    'swagger-ui-bundle.js.LICENSE.txt',
    'swagger-ui-standalone-preset.js',
    'swagger-ui-standalone-preset.js.LICENSE.txt',
    'swagger-ui.css',
    'favicon-32x32.png',
  ],
};

/**
 * The packages the bundles leave in node_modules (the image installs only these, dist/runtime/package.json):
 * PGlite finds its wasm and data files beside its module, @node-rs/argon2 loads a native binary for the
 * platform, and yaml is required at run time only when a contract changed after the build
 * (src/http/contract-documents.ts).
 */
const EXTERNAL_PACKAGES = ['@electric-sql/pglite', '@node-rs/argon2', 'yaml'];
/**
 * Optional drivers knex and pg require lazily, for a dialect or mode the server never uses: not
 * installed, so left as runtime requires that are never reached.
 */
const ABSENT_DRIVERS = ['mariadb', 'mysql', 'mysql2', 'sqlite3', 'better-sqlite3', 'oracledb', 'tedious', 'pg-query-stream', 'pg-native', 'pg-cloudflare'];
/** The commands bin/cfs-server.js runs, by the name of their bundle in dist/src (bundleEntries). */
const BUNDLED_ENTRIES = { main: 'src/main.js', 'bundle-migrate': 'src/tools/migrate.js', 'bundle-sandbox': 'src/sandbox/main.js' };

/**
 * The vendored files also written gzip'd beside themselves (`<file>.gz`, ~4.5 MB less): the server sends
 * that copy to browsers, which all accept gzip (src/server/vendored.ts), and the image ships only it.
 */
const PRECOMPRESSED = /\.(js|css)$/;

function listTypeScript(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return listTypeScript(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const started = performance.now();
for (const dir of SOURCES) rmSync(join(OUT, dir), { recursive: true, force: true });
const files = SOURCES.flatMap((dir) => listTypeScript(join(ROOT, dir)));
await Promise.all(
  files.map(async (file) => {
    const target = join(OUT, relative(ROOT, file)).replace(/\.ts$/, '.js');
    const { code, map } = await transformFile(file, {
      jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
      module: { type: 'es6' },
      sourceMaps: true,
      sourceFileName: relative(dirname(target), file),
      swcrc: false,
      configFile: false,
    });
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, `${code}\n//# sourceMappingURL=${basename(target)}.map\n`);
    if (map) writeFileSync(`${target}.map`, map);
  }),
);
for (const dir of ASSETS) cpSync(join(ROOT, dir), join(OUT, dir), { recursive: true });
rmSync(join(OUT, 'vendor'), { recursive: true, force: true });
for (const [name, vendoredFiles] of Object.entries(VENDORED)) {
  const from = dirname(createRequire(join(ROOT, 'package.json')).resolve(`${name}/package.json`));
  for (const file of [...vendoredFiles, 'LICENSE']) cpSync(join(from, file), join(OUT, 'vendor', name, file));
  for (const file of vendoredFiles.filter((file) => PRECOMPRESSED.test(file))) {
    const path = join(OUT, 'vendor', name, file);
    writeFileSync(`${path}.gz`, gzipSync(readFileSync(path), { level: 9 }));
  }
}
await vendorMarkdownIt(join(OUT, 'vendor/markdown-it'));

// Each OpenAPI document pre-parsed to JSON with the SHA-256 of its YAML (src/http/contract-documents.ts):
// the built server reads that instead of parsing YAML and compiling the OpenAPI meta-schema at every
// start (over a third of its start-up CPU). The build therefore validates each document as the server
// would, and refuses an invalid one; a YAML edited after the build no longer matches its hash and is
// parsed and validated at start as before.
const prebuilt = join(OUT, 'prebuilt/openapi');
rmSync(prebuilt, { recursive: true, force: true });
mkdirSync(prebuilt, { recursive: true });
const metaSchema = new OpenAPISchemaValidator.default({ version: 3 });
for (const file of readdirSync(join(ROOT, 'contracts/openapi')).filter((name) => name.endsWith('.yaml'))) {
  const text = readFileSync(join(ROOT, 'contracts/openapi', file), 'utf8');
  const document = parseYaml(text);
  const { errors } = metaSchema.validate(document);
  if (errors.length > 0) {
    console.error(`contracts/openapi/${file} is not valid OpenAPI: ${JSON.stringify(errors, null, 2)}`);
    process.exit(1);
  }
  // JSON must give back exactly what the YAML parser gave (no NaN, Infinity or other YAML-only values);
  // otherwise this document stays YAML at run time.
  if (!isDeepStrictEqual(JSON.parse(JSON.stringify(document)), document)) continue;
  const sha256 = createHash('sha256').update(text).digest('hex');
  writeFileSync(join(prebuilt, file.replace(/\.yaml$/, '.json')), JSON.stringify({ sha256, document }));
}
// `--no-bundle` keeps the per-file entry (to compare start-up times, or to debug module by module).
if (!process.argv.includes('--no-bundle')) await bundleEntries();
writeRuntimeManifest(OUT);
// `cfs` as one bundled module (bin/cfs.js runs it): scripts/build-cli.mjs.
await buildCli(OUT);
// The plain archive a build of the previous round shipped (now gzip'd: 1 MB, src/store/pglite-template.ts).
rmSync(join(OUT, 'pglite-template.tar'), { force: true });
const template = await buildPgliteTemplate(join(OUT, 'pglite-template.tar.gz'));

const shown = relative(ROOT, OUT).startsWith('..') ? OUT : relative(ROOT, OUT);
console.log(`built ${files.length} files into ${shown} (PGlite template ${template}) in ${((performance.now() - started) / 1000).toFixed(1)} s`);

/**
 * markdown-it (the version the GraphiQL packages bring, which src/handlers/markdown-page.ts loads in a
 * checkout) as one CommonJS file with its dependencies, `<dir>/index.cjs`, and its licence: ~100 kB
 * where the GraphiQL packages it comes with weigh ~55 MB installed.
 */
async function vendorMarkdownIt(dir) {
  const graphiqlReact = createRequire(join(ROOT, 'node_modules/@graphiql/react/package.json'));
  const entry = graphiqlReact.resolve('markdown-it');
  await esbuild({
    entryPoints: [entry],
    outfile: join(dir, 'index.cjs'),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    minify: true,
    logLevel: 'error',
  });
  cpSync(join(dirname(graphiqlReact.resolve('markdown-it/package.json')), 'LICENSE'), join(dir, 'LICENSE'));
}

/**
 * The migrated PGlite template a new embedded database starts from instead of initdb and the
 * migrations (src/store/pglite-template.ts): kept when the one in place still matches, copied from the
 * test suite's cache (.tmp/) when that one does, made otherwise (initdb and the migrations in a
 * scratch directory, then a clean shutdown; seconds). Made from the sources with tsx in a child: the compiled modules in `--out` cannot resolve
 * packages from a directory outside the checkout.
 */
async function buildPgliteTemplate(tarball) {
  const script = `
    const { templateKey, writePgliteTemplate } = await import('./src/store/pglite-template.ts');
    const [tarball, cacheDir] = process.argv.slice(1);
    process.stdout.write(await writePgliteTemplate(tarball, cacheDir + '/pglite-template-' + templateKey() + '.tar'));`;
  const { execFileSync } = await import('node:child_process');
  return execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, tarball, join(ROOT, '.tmp')], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/** The package name a bare import names (`@scope/name` or `name`). */
function packageName(specifier) {
  return specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
}

/**
 * dist/runtime/package.json: the external packages at their installed (locked) versions, all the image's
 * runtime stage installs beside the bundles (Dockerfile).
 */
function writeRuntimeManifest(out) {
  const resolveFrom = createRequire(join(ROOT, 'package.json'));
  const dependencies = Object.fromEntries(
    EXTERNAL_PACKAGES.map((name) => {
      let dir = dirname(resolveFrom.resolve(name));
      while (!existsSync(join(dir, 'package.json')) || JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name !== name) dir = dirname(dir);
      return [name, JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version];
    }),
  );
  mkdirSync(join(out, 'runtime'), { recursive: true });
  writeFileSync(join(out, 'runtime/package.json'), `${JSON.stringify({ name: 'cfs-runtime', private: true, type: 'module', dependencies }, null, 2)}\n`);
}

/**
 * Bundles the command entries (BUNDLED_ENTRIES) together: each becomes one ES module holding our code
 * and every package it imports, ES modules and CommonJS alike, with the code they share in chunks
 * beside dist/src/main.js (bundle-chunk-*.js). Node's module loaders cost ~0.3 ms of CPU per file
 * (docs/architecture.md, "Build, container and time to ready"), and the image then ships only
 * EXTERNAL_PACKAGES in node_modules. CommonJS code in the bundle may require() Node's modules and the
 * externals (the banner's `require`). dist/src/main.js is the server's bundle itself; the other
 * entries' compiled files become one-line imports of theirs (dist/src/bundle-<name>.js). Every output
 * sits in dist/src, and every `import.meta.url` in our code is rewritten to the URL its own file has
 * there, so a path our code resolves against its module (assets, pre-built contracts, package lookups)
 * is the same in the bundle as in the per-file build, which stays in dist/ beside it.
 */
async function bundleEntries() {
  const srcDir = join(OUT, 'src');
  const ownFiles = OUT + sep;
  const external = new Set([...EXTERNAL_PACKAGES, ...ABSENT_DRIVERS]);
  const entryPoints = Object.fromEntries(Object.entries(BUNDLED_ENTRIES).map(([name, entry]) => [name, join(OUT, entry)]));
  await esbuild({
    entryPoints,
    outdir: srcDir,
    allowOverwrite: true,
    bundle: true,
    splitting: true,
    chunkNames: 'bundle-chunk-[hash]',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Packages resolve from the project's node_modules wherever `--out` puts the build.
    nodePaths: [join(ROOT, 'node_modules')],
    banner: { js: "import { createRequire as __cfsCreateRequire } from 'node:module'; const require = __cfsCreateRequire(import.meta.url);" },
    sourcemap: true,
    // Identifiers kept, so stack traces stay legible without the map (scripts/build-cli.mjs does the same).
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: 'error',
    plugins: [
      {
        name: 'externals',
        setup(build) {
          build.onResolve({ filter: /^[^./]/ }, (args) => {
            if (isBuiltin(args.path) || external.has(packageName(args.path))) return { path: args.path, external: true };
            return undefined;
          });
          build.onLoad({ filter: /\.js$/ }, (args) => {
            if (!args.path.startsWith(ownFiles)) return undefined;
            const source = readFileSync(args.path, 'utf8');
            if (!source.includes('import.meta.url')) return undefined;
            const ownUrl = `new URL(${JSON.stringify(`./${relative(srcDir, args.path).split(sep).join('/')}`)}, import.meta.url).href`;
            return { contents: source.replaceAll('import.meta.url', ownUrl), loader: 'js', resolveDir: dirname(args.path) };
          });
        },
      },
    ],
  });
  for (const [name, entry] of Object.entries(BUNDLED_ENTRIES)) {
    if (name === 'main') continue;
    const file = join(OUT, entry);
    rmSync(`${file}.map`, { force: true });
    writeFileSync(
      file,
      `// The bundle (scripts/build.mjs, bundleEntries).\nimport '${relative(dirname(file), join(srcDir, `${name}.js`))
        .split(sep)
        .join('/')}';\n`,
    );
  }
}
