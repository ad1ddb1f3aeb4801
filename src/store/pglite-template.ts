import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrationSource } from './migrations/index.js';

/**
 * A new embedded database starts from a migrated template instead of initdb and the migrations: PGlite
 * loads a `dumpDataDir` tarball in well under a second where initdb alone takes seconds (issue 29).
 * `npm run build` writes one into dist/ (`pglite-template.tar.gz`, with `pglite-template.json`
 * beside it saying what it was made from); the test suite makes the same one in `.tmp/`.
 *
 * A template is used only when it was made by the running PGlite from the running code's migrations;
 * otherwise the caller falls back to initdb and migrates as before. Any migration the code has and
 * the template lacks would be run by the usual migration step anyway, but an exact match is required
 * so that a stale or foreign template can never stand in for the schema the code would build.
 */
interface TemplateManifest {
  /** The PGlite version that made the dump (its data directory layout is that version's). */
  pglite: string;
  /** The migrations it ran, in order. */
  migrations: string[];
  /** sourcesKey() of the code that made it, when its migration sources were at hand. */
  key?: string | undefined;
}

const FILE = 'pglite-template.tar.gz';
const manifestPathOf = (tarball: string) => tarball.replace(/\.tar\.gz$/, '.json');

/** The migrations' TypeScript sources, when this runs from a checkout (tsx, jest, or dist/ inside one). */
function migrationSourcesDir(): string | undefined {
  const candidates = [new URL('./migrations/', import.meta.url), new URL('../../../src/store/migrations/', import.meta.url)];
  for (const candidate of candidates) {
    const dir = fileURLToPath(candidate);
    if (existsSync(join(dir, 'index.ts'))) return dir;
  }
  return undefined;
}

function pgliteVersion(): string {
  // The package's exports do not include its package.json: found from its entry point instead.
  let dir = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

/** A hash of the PGlite version and every migration source file, when this runs from a checkout. */
function sourcesKey(): string | undefined {
  const dir = migrationSourcesDir();
  if (!dir) return undefined;
  const hash = createHash('sha256').update(pgliteVersion());
  for (const file of readdirSync(dir).sort()) hash.update(file).update(readFileSync(join(dir, file)));
  return hash.digest('hex').slice(0, 16);
}

/**
 * A key that changes whenever a migration's source or the PGlite version changes, so a stale template
 * is never reused (the test suite names its template by it).
 */
export function templateKey(): string {
  const key = sourcesKey();
  if (!key) throw new Error('templateKey needs the migration sources (run from a checkout)');
  return key;
}

async function currentManifest(): Promise<TemplateManifest> {
  return { pglite: pgliteVersion(), migrations: await migrationSource.getMigrations([]), key: sourcesKey() };
}

/**
 * The template at `tarball` as a Blob for `openDatabase({ loadDataDir })`, or undefined when it is
 * absent or was not made by this PGlite from these migrations (the key is compared only when both
 * sides had the sources).
 */
export async function readPgliteTemplate(tarball: string): Promise<Blob | undefined> {
  let made: TemplateManifest;
  try {
    made = JSON.parse(readFileSync(manifestPathOf(tarball), 'utf8')) as TemplateManifest;
  } catch {
    return undefined;
  }
  const now = await currentManifest();
  if (made.pglite !== now.pglite) return undefined;
  if (JSON.stringify(made.migrations) !== JSON.stringify(now.migrations)) return undefined;
  if (made.key && now.key && made.key !== now.key) return undefined;
  try {
    return new Blob([readFileSync(tarball)]);
  } catch {
    return undefined;
  }
}

/** Where the build puts the template: dist/ of this module's build, or the checkout's dist/ under tsx. */
function shippedTemplatePaths(): string[] {
  return [new URL(`../../${FILE}`, import.meta.url), new URL(`../../dist/${FILE}`, import.meta.url)].map((url) => fileURLToPath(url));
}

/** The template shipped with the build, or undefined when there is none or it does not match this code. */
export async function shippedPgliteTemplate(): Promise<Blob | undefined> {
  for (const path of shippedTemplatePaths()) {
    if (!existsSync(path)) continue;
    const template = await readPgliteTemplate(path);
    if (template) return template;
  }
  return undefined;
}

/**
 * Makes a template at `tarball` (and its manifest beside it): a new in-memory PGlite, migrated, dumped.
 * Nothing is done when a matching one is already there; one from `reuse` (another matching template,
 * e.g. the test suite's) is copied instead of made again.
 */
export async function writePgliteTemplate(tarball: string, reuse?: string): Promise<'kept' | 'copied' | 'made'> {
  if (await readPgliteTemplate(tarball)) return 'kept';
  mkdirSync(dirname(tarball), { recursive: true });
  if (reuse && (await readPgliteTemplate(reuse))) {
    copyFileSync(reuse, tarball);
    copyFileSync(manifestPathOf(reuse), manifestPathOf(tarball));
    return 'copied';
  }
  // Loaded here: the server's start reads templates and never needs to make one.
  const { openDatabase, migrateLatest } = await import('./database.js');
  const db = await openDatabase({ dataDir: 'memory://' });
  try {
    await migrateLatest(db.knex);
    const client = (db.knex.client as { pglite: { dumpDataDir(compression: 'gzip'): Promise<Blob> } }).pglite;
    const dump = Buffer.from(await (await client.dumpDataDir('gzip')).arrayBuffer());
    // Written under temporary names and renamed: a reader never sees half a template.
    writeFileSync(`${tarball}.${process.pid}`, dump);
    renameSync(`${tarball}.${process.pid}`, tarball);
    const manifest = `${manifestPathOf(tarball)}.${process.pid}`;
    writeFileSync(manifest, `${JSON.stringify(await currentManifest(), null, 2)}\n`);
    renameSync(manifest, manifestPathOf(tarball));
  } finally {
    await db.close();
  }
  return 'made';
}
