import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import v8 from 'node:v8';
import { PGlite } from '@electric-sql/pglite';

/**
 * PostgreSQL settings of the embedded store, passed as `-c` start parameters after PGlite's own
 * defaults. PGlite lays shared memory out inside its wasm heap, so PostgreSQL's stock
 * `shared_buffers = 128MB` (written by initdb) is ~130 MB of resident memory at once; this server's
 * embedded databases are small, and 16 MB (2048 pages) holds their hot set. Durability is untouched:
 * these are cache sizes, not WAL or fsync settings.
 *
 * `plan_cache_mode=force_generic_plan`: the store runs every statement with parameters as a named
 * prepared statement (pglite-statements.ts). PostgreSQL's default re-plans such a statement on every
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
