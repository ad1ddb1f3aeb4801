import { createHash } from 'node:crypto';
import { copyFileSync, createReadStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { migrationSource } from './migrations/index.js';

/**
 * A new embedded database starts from a migrated template instead of initdb and the migrations
 * (issue 29). `npm run build` writes one into dist/ (`pglite-template.tar.gz`, with `pglite-template.json`
 * beside it saying what it was made from); the test suite makes the same one, not gzip'd, in `.tmp/`.
 *
 * The template is the data directory of a database that was migrated and then shut down cleanly
 * (compacted first: compactDataDir), as a ustar archive with trailing zeros left out (9 MB; 1 MB
 * gzip'd as shipped): the server unpacks it into a new DATA_DIR (unpackPgliteDataDir) and opens it
 * exactly like a restart. Two things the first start measured slow are gone that way:
 * gunzipping 41 MB into fresh memory (a `dumpDataDir('gzip')`), and crash recovery, since a dump of
 * a running database opens as one that crashed. PGlite's `loadDataDir` takes it for an in-memory
 * database once expanded (readPgliteTemplate).
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
  /** sha256 of the archive, so that whatever is kept from it (the sandbox's seed) knows it changed. */
  digest?: string;
}

const FILE = 'pglite-template.tar.gz';
/** How templates are made and archived (compactDataDir, zero-trimmed files): part of the key, so older ones are made again. */
const TEMPLATE_FORMAT = 'compact-sparse-2';
const manifestPathOf = (tarball: string) => tarball.replace(/\.tar(\.gz)?$/, '.json');

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
  const hash = createHash('sha256').update(pgliteVersion()).update(TEMPLATE_FORMAT);
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

/** The manifest beside `tarball` when it says the archive was made by this PGlite from these migrations. */
async function matchingManifest(tarball: string): Promise<TemplateManifest | undefined> {
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
  return existsSync(tarball) ? made : undefined;
}

/**
 * `tarball` when it is a template made by this PGlite from these migrations (the key is compared only
 * when both sides had the sources), else undefined.
 */
export async function matchingPgliteTemplate(tarball: string): Promise<string | undefined> {
  return (await matchingManifest(tarball)) ? tarball : undefined;
}

/** The template at `tarball` as a Blob for `openDatabase({ loadDataDir })` (in memory), when it matches as above. */
export async function readPgliteTemplate(tarball: string): Promise<Blob | undefined> {
  if (!(await matchingPgliteTemplate(tarball))) return undefined;
  try {
    const { plainPgliteArchive } = await import('./pglite/init.js');
    return await plainPgliteArchive(tarball);
  } catch {
    return undefined;
  }
}

/**
 * What identifies a matching template's content (its manifest's digest, or the archive hashed when
 * an older build wrote none), so that what was made from it can be kept and found again.
 */
export async function templateDigest(tarball: string): Promise<string> {
  const manifest = await matchingManifest(tarball);
  if (manifest?.digest) return manifest.digest;
  return fileDigest(tarball);
}

async function fileDigest(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Where the build puts the template: dist/ of this module's build, or the checkout's dist/ under tsx. */
function shippedTemplatePaths(): string[] {
  return [new URL(`../../${FILE}`, import.meta.url), new URL(`../../dist/${FILE}`, import.meta.url)].map((url) => fileURLToPath(url));
}

/** The path of the template shipped with the build, or undefined when there is none or it does not match this code. */
export async function shippedPgliteTemplate(): Promise<string | undefined> {
  for (const path of shippedTemplatePaths()) {
    if (!existsSync(path)) continue;
    if (await matchingPgliteTemplate(path)) return path;
  }
  return undefined;
}

/**
 * Leaves a closed, migrated data directory as small as it can be archived (issue 28), and closes it cleanly again:
 * - template0 and template1 are dropped (~7.5 MB each): PGlite opens `postgres`, and nothing here runs
 *   CREATE DATABASE on an embedded store (the server, migrations, `cfs-server migrate`, the sandbox);
 * - the WAL of initdb and the migrations (~17 MB) is left behind: with `wal_recycle=off`, a WAL switch and
 *   a checkpoint, done twice, remove the old segments, and the one left is freshly zero-filled, holding
 *   just the checkpoints, which the archive stores without its zeros (packPgliteDataDir).
 */
async function compactDataDir(dataDir: string): Promise<void> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { pgliteStartParams } = await import('./pglite/init.js');
  const startParams = [...pgliteStartParams(16), '-c', 'wal_recycle=off', '-c', 'min_wal_size=32MB', '-c', 'max_wal_size=32MB'];
  const pglite = await PGlite.create({ dataDir, startParams });
  try {
    for (const name of ['template0', 'template1']) {
      await pglite.query(`UPDATE pg_database SET datistemplate = false WHERE datname = '${name}'`);
      await pglite.query(`DROP DATABASE IF EXISTS ${name}`);
    }
    for (let round = 0; round < 2; round++) {
      await pglite.query('SELECT pg_switch_wal()');
      await pglite.query('CHECKPOINT');
    }
  } finally {
    await pglite.close();
  }
}

/**
 * Makes a template at `tarball` (and its manifest beside it): a new PGlite data directory, migrated,
 * closed and archived. Nothing is done when a matching one is already there; one from `reuse` (a cache of matching
 * templates, e.g. the test suite's) is copied instead of made again, and a template made is left there too.
 */
export async function writePgliteTemplate(tarball: string, reuse?: string): Promise<'kept' | 'copied' | 'made'> {
  if (await matchingPgliteTemplate(tarball)) return 'kept';
  mkdirSync(dirname(tarball), { recursive: true });
  if (reuse && (await matchingPgliteTemplate(reuse))) {
    placeArchive(reuse, tarball);
    copyFileSync(manifestPathOf(reuse), manifestPathOf(tarball));
    return 'copied';
  }
  // Loaded here: the server's start reads templates and never needs to make one.
  const { openDatabase, migrateLatest } = await import('./database.js');
  const { packPgliteDataDir } = await import('./pglite/init.js');
  // Made on disk and closed (a clean shutdown) before it is archived: see the top of this file.
  const scratch = mkdtempSync(join(tmpdir(), 'cfs-pglite-template-'));
  try {
    const dataDir = join(scratch, 'data');
    const db = await openDatabase({ dataDir });
    try {
      await migrateLatest(db.knex);
    } finally {
      await db.close();
    }
    await compactDataDir(dataDir);
    const packed = join(scratch, 'template.tar');
    packPgliteDataDir(dataDir, packed);
    // The digest of the plain archive, whichever form each copy takes.
    const manifest = `${JSON.stringify({ ...(await currentManifest()), digest: await fileDigest(packed) }, null, 2)}\n`;
    for (const target of reuse ? [tarball, reuse] : [tarball]) {
      mkdirSync(dirname(target), { recursive: true });
      placeArchive(packed, target);
      writeFileSync(`${manifestPathOf(target)}.${process.pid}`, manifest);
      renameSync(`${manifestPathOf(target)}.${process.pid}`, manifestPathOf(target));
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return 'made';
}

/**
 * Copies a template archive to `target`, gzip'd when `target` ends in `.gz` and `from` does not (the
 * build ships 1 MB where the plain archive is 9 MB, for ~40 ms more CPU at a first start; the test
 * suite's cache stays plain). Written under a temporary name and renamed: a reader never sees half.
 */
function placeArchive(from: string, target: string): void {
  const temporary = `${target}.${process.pid}`;
  if (target.endsWith('.gz') && !from.endsWith('.gz')) writeFileSync(temporary, gzipSync(readFileSync(from), { level: 9 }));
  else copyFileSync(from, temporary);
  renameSync(temporary, target);
}
