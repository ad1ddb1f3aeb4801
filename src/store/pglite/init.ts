import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, join, normalize, sep } from 'node:path';
import v8 from 'node:v8';
import { gunzipSync } from 'node:zlib';
import { PGlite } from '@electric-sql/pglite';

/**
 * PostgreSQL settings of the embedded store, passed as `-c` start parameters after PGlite's own
 * defaults. PGlite lays shared memory out inside its wasm heap, so PostgreSQL's stock
 * `shared_buffers = 128MB` (written by initdb) is ~130 MB of resident memory at once; this server's
 * embedded databases are small, and 16 MB (2048 pages) holds their hot set. Durability is untouched:
 * these are cache sizes, not WAL or fsync settings.
 *
 * `plan_cache_mode=force_generic_plan`: the store runs every statement with parameters as a named
 * prepared statement (statements.ts). PostgreSQL's default re-plans such a statement on every
 * execution whenever its generic plan looks costlier than the custom ones, which it does for
 * `id = ANY($1::uuid[])` (the user read), and planning in wasm costs ~25 µs a query there. The
 * generic plan is planned once; plans only change speed, never results, and this store's statements
 * are lookups by key whose best plan does not depend on the values. One consequence: a generic plan
 * uses a partial index only when the statement's own text implies its predicate, so a value the
 * predicate names (`status = 'published'`) must be written into the SQL, not bound
 * (docs/architecture.md, "Publishing lists on PGlite"). Statistics are kept by PgliteAnalyzer.
 */
export function pgliteStartParams(sharedBuffersMb: number): string[] {
  return [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffersMb}MB`, '-c', 'plan_cache_mode=force_generic_plan'];
}

/**
 * PGlite's PostgreSQL is 9 MB of wasm. V8 compiles it with its baseline compiler (Liftoff) and then
 * recompiles the functions it finds hot with TurboFan, keeping both: ~40 MB more resident memory
 * once the server has answered a few requests. Liftoff code alone answers indexed lookups (this
 * server's queries) as fast — the per-query cost is the wire protocol and the copy into wasm — and
 * scans ~1.5× slower (docs/operations.md, Memory). The flag must be set before the module compiles
 * (PGlite.create); an operator who passes a wasm tiering flag to node (e.g. `--no-liftoff-only`)
 * keeps theirs.
 */
export function preferBaselineWasm(): void {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  if (given.some((flag) => /liftoff|wasm-tier|wasm-dynamic-tiering/.test(flag))) return;
  v8.setFlagsFromString('--liftoff-only');
}

/**
 * A new data directory is created (initdb, ~3 s) by a short-lived child process rather than in this
 * one. PGlite runs initdb in a second wasm instance, and this process would keep that memory for its
 * whole life: ~140 MB more idle RSS than a restart (peak ~830 MB), and a worker thread gave little of
 * it back (freed, but kept by the allocator). A process returns all of it when it exits; the server
 * then opens the existing directory like any restart. Answers false when the directory already
 * holds a database.
 */
export async function initPgliteDataDir(dataDir: string, startParams: string[]): Promise<boolean> {
  if (existsSync(join(dataDir, 'PG_VERSION'))) return false;
  // The CommonJS build, required by path: the child needs no loader (tsx, jest) and no package lookup.
  const pgliteEntry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const source = `
    const [pgliteEntry, dataDir, startParams] = process.argv.slice(1);
    const { PGlite } = require(pgliteEntry);
    PGlite.create({ dataDir, startParams: JSON.parse(startParams) }).then((db) => db.close());
  `;
  await new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=commonjs', '-e', source, pgliteEntry, dataDir, JSON.stringify(startParams)],
      { env: { ...process.env, NODE_OPTIONS: '' } },
      (error, _stdout, stderr) => {
        if (error) reject(new Error(`initdb failed: ${stderr.trim().split('\n').slice(-3).join(' ') || error.message}`, { cause: error }));
        else resolve();
      },
    );
  });
  return true;
}

/**
 * Unpacks a `dumpDataDir` tarball (gzip'd ustar: directories and regular files) into an empty data
 * directory, which PGlite then opens like any restart. PGlite's own `loadDataDir` writes each file
 * through its wasm file system instead, which measured nearly twice the CPU of this plus the open.
 * Answers false, writing nothing, for an archive holding anything else (another entry type, a path
 * leaving the directory): the caller then lets PGlite load it.
 */
export async function unpackPgliteDataDir(dataDir: string, dump: Blob): Promise<boolean> {
  const archive = gunzipSync(Buffer.from(await dump.arrayBuffer()));
  const text = (from: number, length: number) => archive.toString('latin1', from, from + length).replace(/\0[^]*$/, '');
  const entries: Array<{ path: string; directory: boolean; start: number; size: number }> = [];
  for (let offset = 0; offset + 512 <= archive.length;) {
    if (archive.subarray(offset, offset + 512).every((byte) => byte === 0)) break;
    const name = [text(offset + 345, 155), text(offset, 100)].filter(Boolean).join('/');
    const size = Number.parseInt(text(offset + 124, 12).trim() || '0', 8);
    const type = String.fromCharCode(archive[offset + 156] || 0x30);
    const path = normalize(name.replace(/^\/+/, ''));
    if (!text(offset + 257, 6).startsWith('ustar') || !['0', '5'].includes(type) || !Number.isFinite(size)) return false;
    if (isAbsolute(path) || path === '..' || path.startsWith(`..${sep}`)) return false;
    entries.push({ path, directory: type === '5', start: offset + 512, size });
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  for (const entry of entries) {
    const target = join(dataDir, entry.path);
    if (entry.directory) mkdirSync(target, { recursive: true, mode: 0o700 });
    else writeFileSync(target, archive.subarray(entry.start, entry.start + entry.size), { mode: 0o600 });
  }
  return existsSync(join(dataDir, 'PG_VERSION'));
}
