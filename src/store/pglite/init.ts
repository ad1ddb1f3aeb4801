import { execFile } from 'node:child_process';
import { closeSync, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, join, normalize, sep } from 'node:path';
import v8 from 'node:v8';
import { gunzipSync } from 'node:zlib';
import { PGlite } from '@electric-sql/pglite';
import { LOCK_FILE } from '../data-dir-lock.js';

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

/** A readable tar archive: an uncompressed file read where needed, or a whole archive in memory. */
interface ArchiveSource {
  size: number;
  /** Fills `into` from `position` on; answers how many bytes it read. */
  read(into: Buffer, length: number, position: number): number;
  close(): void;
}

const GZIP_MAGIC = [0x1f, 0x8b];

function isGzip(bytes: Uint8Array): boolean {
  return bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1];
}

function bufferSource(bytes: Buffer): ArchiveSource {
  const archive = isGzip(bytes) ? gunzipSync(bytes) : bytes;
  return { size: archive.length, read: (into, length, position) => archive.copy(into, 0, position, position + length), close: () => undefined };
}

/**
 * An archive file, read in place when uncompressed (the build's template, src/store/pglite-template.ts):
 * each entry is copied through one small buffer, where gunzipping a 41 MB archive into memory cost the
 * first start most of its time (fresh memory is slow on a busy machine). A gzip one is read whole.
 */
function fileSource(path: string): ArchiveSource {
  const fd = openSync(path, 'r');
  const magic = Buffer.alloc(2);
  readSync(fd, magic, 0, 2, 0);
  if (isGzip(magic)) {
    closeSync(fd);
    return bufferSource(readFileSync(path));
  }
  return { size: fstatSync(fd).size, read: (into, length, position) => readSync(fd, into, 0, length, position), close: () => closeSync(fd) };
}

/** What an archive entry says of itself (ustar header). */
interface TarEntry {
  path: string;
  directory: boolean;
  start: number;
  size: number;
}

/** The archive's entries, or undefined when it holds anything but directories and regular files inside the data directory. */
function tarEntries(source: ArchiveSource): TarEntry[] | undefined {
  const header = Buffer.alloc(512);
  const text = (from: number, length: number) => header.toString('latin1', from, from + length).replace(/\0[^]*$/, '');
  const entries: TarEntry[] = [];
  for (let offset = 0; offset + 512 <= source.size;) {
    if (source.read(header, 512, offset) < 512 || header.every((byte) => byte === 0)) break;
    const name = [text(345, 155), text(0, 100)].filter(Boolean).join('/');
    const size = Number.parseInt(text(124, 12).trim() || '0', 8);
    const type = String.fromCharCode(header[156] || 0x30);
    const path = normalize(name.replace(/^\/+/, ''));
    if (!text(257, 6).startsWith('ustar') || !['0', '5'].includes(type) || !Number.isFinite(size)) return undefined;
    if (isAbsolute(path) || path === '..' || path.startsWith(`..${sep}`) || offset + 512 + size > source.size) return undefined;
    entries.push({ path, directory: type === '5', start: offset + 512, size });
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return entries;
}

/** Size of the buffer each file is copied through. */
const COPY_CHUNK = 1 << 20;

/**
 * Unpacks a data directory archive (ustar of directories and regular files: the build's template, a
 * `dumpDataDir` tarball, gzip'd or not) into an empty data directory, which PGlite then opens like
 * any restart. PGlite's own `loadDataDir` writes each file through its wasm file system instead, which
 * measured nearly twice the CPU of this plus the open. Answers false, writing nothing, for an archive
 * holding anything else (another entry type, a path leaving the directory): the caller then lets
 * PGlite load it.
 */
export async function unpackPgliteDataDir(dataDir: string, archive: string | Blob): Promise<boolean> {
  const source = typeof archive === 'string' ? fileSource(archive) : bufferSource(Buffer.from(await archive.arrayBuffer()));
  try {
    const entries = tarEntries(source);
    if (!entries) return false;
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const chunk = Buffer.allocUnsafe(COPY_CHUNK);
    for (const entry of entries) {
      const target = join(dataDir, entry.path);
      if (entry.directory) {
        mkdirSync(target, { recursive: true, mode: 0o700 });
        continue;
      }
      const out = openSync(target, 'w', 0o600);
      try {
        for (let done = 0; done < entry.size;) {
          const read = source.read(chunk, Math.min(COPY_CHUNK, entry.size - done), entry.start + done);
          if (read <= 0) throw new Error(`the archive ends inside ${entry.path}`);
          writeSync(out, chunk, 0, read);
          done += read;
        }
      } finally {
        closeSync(out);
      }
    }
    return existsSync(join(dataDir, 'PG_VERSION'));
  } finally {
    source.close();
  }
}

/** Files of a data directory that belong to a running process, never to an archive of it. */
const NOT_ARCHIVED = new Set(['postmaster.pid', 'postmaster.opts', LOCK_FILE]);

/** A ustar header for one entry (names split into prefix/name where longer than 100 bytes). */
function tarHeader(path: string, size: number, directory: boolean, mtime: number): Buffer {
  const header = Buffer.alloc(512);
  const name = directory ? `${path}/` : path;
  const split = name.length > 100 ? name.lastIndexOf('/', name.length - 2) : -1;
  if (Buffer.byteLength(name) > 255 || (split < 0 && name.length > 100) || split > 155 || name.length - split - 1 > 100) {
    throw new Error(`cannot archive ${path}: name too long for ustar`);
  }
  const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, '0');
  header.write(split < 0 ? name : name.slice(split + 1), 0, 100, 'utf8');
  header.write(octal(directory ? 0o700 : 0o600, 8), 100, 'latin1');
  header.write(octal(0, 8), 108, 'latin1');
  header.write(octal(0, 8), 116, 'latin1');
  header.write(octal(size, 12), 124, 'latin1');
  header.write(octal(mtime, 12), 136, 'latin1');
  header.write(directory ? '5' : '0', 156, 'latin1');
  header.write('ustar\0' + '00', 257, 'latin1');
  if (split >= 0) header.write(name.slice(0, split), 345, 155, 'utf8');
  // The checksum is computed with its own field as spaces.
  header.fill(0x20, 148, 156);
  const sum = header.reduce((total, byte) => total + byte, 0);
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return header;
}

/**
 * Writes a stopped data directory as an uncompressed ustar archive (directories and regular files,
 * in a stable order), the form unpackPgliteDataDir reads fastest and PGlite's `loadDataDir` also takes.
 */
export function packPgliteDataDir(dataDir: string, tarball: string): void {
  const out = openSync(tarball, 'w', 0o644);
  try {
    const walk = (relative: string): void => {
      for (const name of readdirSync(join(dataDir, relative)).sort()) {
        const path = relative ? `${relative}/${name}` : name;
        if (!relative && NOT_ARCHIVED.has(name)) continue;
        const stat = lstatSync(join(dataDir, path));
        const mtime = Math.floor(stat.mtimeMs / 1000);
        if (stat.isDirectory()) {
          writeSync(out, tarHeader(path, 0, true, mtime));
          walk(path);
        } else if (stat.isFile()) {
          const content = readFileSync(join(dataDir, path));
          writeSync(out, tarHeader(path, content.length, false, mtime));
          writeSync(out, content);
          const padding = (512 - (content.length % 512)) % 512;
          if (padding) writeSync(out, Buffer.alloc(padding));
        } else {
          throw new Error(`cannot archive ${path}: neither a directory nor a regular file`);
        }
      }
    };
    walk('');
    // The end of the archive: two empty blocks.
    writeSync(out, Buffer.alloc(1024));
  } finally {
    closeSync(out);
  }
}
