import { execFile } from 'node:child_process';
import { closeSync, existsSync, fstatSync, ftruncateSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, writeSync } from 'node:fs';
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

/** What an archive entry says of itself (ustar header, and a GNU sparse map for a zero-trimmed file). */
interface TarEntry {
  path: string;
  directory: boolean;
  /** The file's size once written: beyond its stored regions it is zeros (a sparse tail). */
  size: number;
  /** Where the file's stored bytes are: `length` bytes from `start` in the archive, at `offset` in the file. */
  regions: Array<{ start: number; offset: number; length: number }>;
}

/** Largest PAX extended header read (ours hold four short records). */
const MAX_PAX_SIZE = 64 * 1024;

/** The records of a PAX extended header (`<length> <key>=<value>\n` each), or undefined when malformed. */
function paxRecords(data: Buffer): Map<string, string> | undefined {
  const records = new Map<string, string>();
  for (let at = 0; at < data.length && data[at] !== 0;) {
    const space = data.indexOf(0x20, at);
    const length = Number.parseInt(data.toString('latin1', at, space), 10);
    if (space < 0 || !Number.isSafeInteger(length) || length <= space - at || at + length > data.length) return undefined;
    const record = data.toString('utf8', space + 1, at + length - 1);
    const equals = record.indexOf('=');
    if (equals < 0 || data[at + length - 1] !== 0x0a) return undefined;
    records.set(record.slice(0, equals), record.slice(equals + 1));
    at += length;
  }
  return records;
}

/**
 * The data regions of a GNU sparse 1.0 entry (its map: decimal lines, a count then offset/length pairs,
 * in the entry's first 512-byte block), or undefined when the map is malformed, out of order, or does
 * not fit the entry or `realSize`.
 */
function sparseRegions(block: Buffer, start: number, stored: number, realSize: number): TarEntry['regions'] | undefined {
  const lines = block.toString('latin1').split('\n');
  const numbers = lines.slice(0, -1).map((line) => (/^\d{1,15}$/.test(line) ? Number(line) : Number.NaN));
  const count = numbers[0];
  if (count === undefined || !Number.isSafeInteger(count) || numbers.length < 1 + 2 * count) return undefined;
  const regions: TarEntry['regions'] = [];
  let dataAt = start + 512;
  let end = 0;
  for (let index = 0; index < count; index++) {
    const offset = numbers[1 + 2 * index]!;
    const length = numbers[2 + 2 * index]!;
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < end || offset + length > realSize) return undefined;
    regions.push({ start: dataAt, offset, length });
    dataAt += length;
    end = offset + length;
  }
  return dataAt <= start + stored ? regions : undefined;
}

/**
 * The archive's entries, or undefined when it holds anything but directories and regular files
 * (plain, or zero-trimmed as GNU sparse 1.0 files, which packPgliteDataDir writes) inside the data
 * directory, or an entry cut off by the archive's end.
 */
function tarEntries(source: ArchiveSource): TarEntry[] | undefined {
  const header = Buffer.alloc(512);
  const text = (from: number, length: number) => header.toString('latin1', from, from + length).replace(/\0[^]*$/, '');
  const entries: TarEntry[] = [];
  let pax: Map<string, string> | undefined;
  for (let offset = 0; offset + 512 <= source.size;) {
    if (source.read(header, 512, offset) < 512 || header.every((byte) => byte === 0)) break;
    const name = [text(345, 155), text(0, 100)].filter(Boolean).join('/');
    const size = Number.parseInt(text(124, 12).trim() || '0', 8);
    const type = String.fromCharCode(header[156] || 0x30);
    if (!text(257, 6).startsWith('ustar') || !['0', '5', 'x'].includes(type) || !Number.isSafeInteger(size) || size < 0) return undefined;
    const start = offset + 512;
    if (start + size > source.size) return undefined;
    offset = start + Math.ceil(size / 512) * 512;
    if (type === 'x') {
      // Extended attributes of the next entry: only one per entry, and only what a sparse file needs.
      if (pax || size > MAX_PAX_SIZE) return undefined;
      const data = Buffer.alloc(size);
      if (source.read(data, size, start) < size) return undefined;
      pax = paxRecords(data);
      if (!pax) return undefined;
      continue;
    }
    const attributes = pax;
    pax = undefined;
    const sparse = attributes?.get('GNU.sparse.major') !== undefined;
    const path = normalize((sparse ? (attributes?.get('GNU.sparse.name') ?? '') : (attributes?.get('path') ?? name)).replace(/^\/+/, ''));
    if (!path || (path === '.' && type !== '5') || isAbsolute(path) || path === '..' || path.startsWith(`..${sep}`)) return undefined;
    if (!sparse) {
      if (attributes && [...attributes.keys()].some((key) => key !== 'path')) return undefined;
      entries.push({ path, directory: type === '5', size, regions: [{ start, offset: 0, length: size }] });
      continue;
    }
    const realSize = Number(attributes?.get('GNU.sparse.realsize'));
    if (type !== '0' || attributes?.get('GNU.sparse.major') !== '1' || attributes.get('GNU.sparse.minor') !== '0') return undefined;
    if (!Number.isSafeInteger(realSize) || realSize < 0 || size < 512) return undefined;
    const block = Buffer.alloc(512);
    if (source.read(block, 512, start) < 512) return undefined;
    const regions = sparseRegions(block, start, size, realSize);
    if (!regions) return undefined;
    entries.push({ path, directory: false, size: realSize, regions });
  }
  return pax ? undefined : entries;
}

/** Size of the buffer each file is copied through. */
const COPY_CHUNK = 1 << 20;

/** Copies one stored region of an entry into `out` at its offset, through `chunk`. */
function copyRegion(source: ArchiveSource, region: TarEntry['regions'][number], out: number, chunk: Buffer, path: string): void {
  for (let done = 0; done < region.length;) {
    const read = source.read(chunk, Math.min(chunk.length, region.length - done), region.start + done);
    if (read <= 0) throw new Error(`the archive ends inside ${path}`);
    writeSync(out, chunk, 0, read, region.offset + done);
    done += read;
  }
}

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
        for (const region of entry.regions) copyRegion(source, region, out, chunk, entry.path);
        // A zero-trimmed file's tail: extended, not written (sparse where the file system allows).
        ftruncateSync(out, entry.size);
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
function tarHeader(path: string, size: number, type: '0' | '5' | 'x', mtime: number): Buffer {
  const header = Buffer.alloc(512);
  const name = type === '5' ? `${path}/` : path;
  const split = name.length > 100 ? name.lastIndexOf('/', name.length - 2) : -1;
  if (Buffer.byteLength(name) > 255 || (split < 0 && name.length > 100) || split > 155 || name.length - split - 1 > 100) {
    throw new Error(`cannot archive ${path}: name too long for ustar`);
  }
  const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, '0');
  header.write(split < 0 ? name : name.slice(split + 1), 0, 100, 'utf8');
  header.write(octal(type === '5' ? 0o700 : 0o600, 8), 100, 'latin1');
  header.write(octal(0, 8), 108, 'latin1');
  header.write(octal(0, 8), 116, 'latin1');
  header.write(octal(size, 12), 124, 'latin1');
  header.write(octal(mtime, 12), 136, 'latin1');
  header.write(type, 156, 'latin1');
  header.write('ustar\0' + '00', 257, 'latin1');
  if (split >= 0) header.write(name.slice(0, split), 345, 155, 'utf8');
  // The checksum is computed with its own field as spaces.
  header.fill(0x20, 148, 156);
  const sum = header.reduce((total, byte) => total + byte, 0);
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return header;
}

/** `bytes` padded with zeros to whole 512-byte blocks. */
function blocks(bytes: Buffer): Buffer {
  const padding = (512 - (bytes.length % 512)) % 512;
  return padding ? Buffer.concat([bytes, Buffer.alloc(padding)]) : bytes;
}

/** One PAX record, `<length> <key>=<value>\n`, its length counting itself. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(body);
  while (`${length}${body}`.length !== length) length = Buffer.byteLength(`${length}${body}`);
  return `${length}${body}`;
}

/** The length of `content` without its trailing zero bytes. */
function withoutTrailingZeros(content: Buffer): number {
  let end = content.length;
  while (end >= 8 && content.readBigUInt64LE(end - 8) === 0n) end -= 8;
  while (end > 0 && content[end - 1] === 0) end--;
  return end;
}

/** A trimmed file costs three blocks more (PAX header, its records, the sparse map): trimmed only when that saves more. */
const MIN_TRIM = 4 * 512;

/**
 * The archive entry of one regular file: plain, or when it ends in zeros (a WAL segment holding one
 * checkpoint, a relation's empty last pages), those stored as a GNU sparse 1.0 file (a PAX header with
 * its real size, then a map of one data region and an empty one at the end, and the bytes before the zeros), which unpackPgliteDataDir
 * extends without writing the zeros, and GNU tar and bsdtar extract too.
 */
function fileEntry(path: string, content: Buffer, mtime: number): Buffer[] {
  const stored = withoutTrailingZeros(content);
  if (content.length - stored < MIN_TRIM) return [tarHeader(path, content.length, '0', mtime), blocks(content)];
  const records = Buffer.from(
    paxRecord('GNU.sparse.major', '1') +
      paxRecord('GNU.sparse.minor', '0') +
      paxRecord('GNU.sparse.name', path) +
      paxRecord('GNU.sparse.realsize', String(content.length)),
  );
  const slash = path.lastIndexOf('/');
  const inDir = (name: string) => (slash < 0 ? name : `${path.slice(0, slash)}/${name}`);
  const base = path.slice(slash + 1);
  // The last region, empty at the file's end, is how GNU tar learns the size.
  const map = blocks(Buffer.from(`2\n0\n${stored}\n${content.length}\n0\n`));
  return [
    tarHeader(inDir(`PaxHeaders/${base}`), records.length, 'x', mtime),
    blocks(records),
    tarHeader(inDir(`GNUSparseFile.0/${base}`), map.length + stored, '0', mtime),
    map,
    blocks(content.subarray(0, stored)),
  ];
}

/**
 * Writes a stopped data directory as an uncompressed ustar archive (directories and regular files,
 * in a stable order, trailing zeros left out: fileEntry), the form unpackPgliteDataDir reads fastest.
 * PGlite's `loadDataDir` reads no sparse entries: plainPgliteArchive expands one for it.
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
          writeSync(out, tarHeader(path, 0, '5', mtime));
          walk(path);
        } else if (stat.isFile()) {
          for (const part of fileEntry(path, readFileSync(join(dataDir, path)), mtime)) writeSync(out, part);
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

/**
 * A data directory archive as PGlite's `loadDataDir` reads it (an in-memory database): plain ustar,
 * every file at its full size (zero-trimmed ones extended), gunzipped. Answers undefined for an archive
 * unpackPgliteDataDir would refuse.
 */
export async function plainPgliteArchive(archive: string | Blob): Promise<Blob | undefined> {
  const source = typeof archive === 'string' ? fileSource(archive) : bufferSource(Buffer.from(await archive.arrayBuffer()));
  try {
    const entries = tarEntries(source);
    if (!entries) return undefined;
    const parts: Buffer[] = [];
    for (const entry of entries) {
      parts.push(tarHeader(entry.path, entry.directory ? 0 : entry.size, entry.directory ? '5' : '0', 0));
      if (entry.directory) continue;
      const content = Buffer.alloc(entry.size);
      for (const region of entry.regions) {
        if (source.read(content.subarray(region.offset), region.length, region.start) < region.length) return undefined;
      }
      parts.push(blocks(content));
    }
    parts.push(Buffer.alloc(1024));
    return new Blob(parts);
  } finally {
    source.close();
  }
}
