import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { openDatabase } from '../../src/store/database.js';
import { migrationSource } from '../../src/store/migrations/index.js';
import { packPgliteDataDir, plainPgliteArchive, unpackPgliteDataDir } from '../../src/store/pglite/init.js';
import { readPgliteTemplate } from '../../src/store/pglite-template.js';
import { budget } from '../support/budget.js';
import { pgliteTemplatePath } from '../support/template.js';

/**
 * The migrated template a new embedded database starts from (src/store/pglite-template.ts): the
 * suite's own (made by global setup with the function `npm run build` uses), and copies of it whose
 * manifest says they were made by other code, which must not be used.
 */
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cfs-template-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const manifestOf = (tarball: string) => JSON.parse(readFileSync(tarball.replace(/\.tar$/, '.json'), 'utf8')) as Record<string, unknown>;

/** A copy of the suite's template whose manifest is changed by `edit`. */
function copyWith(edit: (manifest: Record<string, unknown>) => void): string {
  const tarball = join(dir, 'pglite-template.tar');
  copyFileSync(pgliteTemplatePath(), tarball);
  const manifest = manifestOf(pgliteTemplatePath());
  edit(manifest);
  writeFileSync(join(dir, 'pglite-template.json'), JSON.stringify(manifest));
  return tarball;
}

test(
  'a matching template opens as a database holding every migration of this code',
  async () => {
    const template = await readPgliteTemplate(pgliteTemplatePath());
    expect(template).toBeInstanceOf(Blob);
    const db = await openDatabase({ dataDir: 'memory://', loadDataDir: template! });
    try {
      const { rows } = await db.knex.raw<{ rows: Array<{ name: string }> }>('SELECT name FROM knex_migrations ORDER BY id');
      expect(rows.map((row) => row.name)).toEqual(await migrationSource.getMigrations([]));
      const databases = await db.knex.raw<{ rows: Array<{ datname: string }> }>('SELECT datname FROM pg_database');
      expect(databases.rows.map((row) => row.datname)).toEqual(['postgres']);
    } finally {
      await db.close();
    }
  },
  budget(10_000),
);

test.each<[string, (manifest: Record<string, unknown>) => void]>([
  ['another PGlite version made it', (manifest) => (manifest.pglite = '0.0.1')],
  ['it lacks a migration of this code', (manifest) => (manifest.migrations = (manifest.migrations as string[]).slice(0, -1))],
  ['it ran a migration this code does not know', (manifest) => (manifest.migrations = [...(manifest.migrations as string[]), '29991231000000_later'])],
  ['a migration source changed since', (manifest) => (manifest.key = '0000000000000000')],
])('a template is not used when %s', async (_name, edit) => {
  expect(await readPgliteTemplate(copyWith(edit))).toBeUndefined();
});

test('a template without its manifest is not used', async () => {
  const tarball = join(dir, 'pglite-template.tar');
  copyFileSync(pgliteTemplatePath(), tarball);
  expect(await readPgliteTemplate(tarball)).toBeUndefined();
});

test('an unchanged copy of a template is used (the checks above are what refuse the others)', async () => {
  expect(await readPgliteTemplate(copyWith(() => undefined))).toBeInstanceOf(Blob);
});

test('the template is a data directory shut down cleanly, so a first start opens it like a restart (no crash recovery)', async () => {
  const dataDir = join(dir, 'data');
  expect(await unpackPgliteDataDir(dataDir, pgliteTemplatePath())).toBe(true);
  // pg_control's state (after system identifier, pg_control and catalog versions): 1 is DB_SHUTDOWNED,
  // where a dump of a running database says 6, DB_IN_PRODUCTION.
  expect(readFileSync(join(dataDir, 'global/pg_control')).readUInt32LE(16)).toBe(1);
  expect(existsSync(join(dataDir, 'postmaster.pid'))).toBe(false);
  expect(existsSync(join(dataDir, 'cfs.lock'))).toBe(false);
});

/** One ustar header block for `name` (a regular file of `size` bytes; the reader checks no checksum). */
function ustarHeader(name: string, size: number): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0);
  header.write(size.toString(8).padStart(11, '0'), 124);
  header.write('0', 156);
  header.write('ustar\u000000', 257, 'latin1');
  return header;
}

test.each([
  ['a path leaving the data directory', ustarHeader('../outside', 0)],
  ['a symbolic link', Buffer.concat([ustarHeader('PG_VERSION', 0)]).fill('2', 156, 157)],
  ['an entry longer than the archive', ustarHeader('PG_VERSION', 4096)],
])('an archive holding %s is refused and nothing is written', async (_name, header) => {
  const tarball = join(dir, 'bad.tar');
  writeFileSync(tarball, Buffer.concat([header, Buffer.alloc(1024)]));
  const dataDir = join(dir, 'data');
  expect(await unpackPgliteDataDir(dataDir, tarball)).toBe(false);
  expect(existsSync(dataDir)).toBe(false);
  expect(existsSync(join(dir, 'outside'))).toBe(false);
});

test('the template holds one database and one WAL segment, the old WAL and template0/template1 left out (issue 28)', async () => {
  const dataDir = join(dir, 'data');
  expect(await unpackPgliteDataDir(dataDir, pgliteTemplatePath())).toBe(true);
  expect(readdirSync(join(dataDir, 'pg_wal')).filter((name) => /^[0-9A-F]{24}$/.test(name))).toHaveLength(1);
  // base/ holds one directory per database: postgres only.
  expect(readdirSync(join(dataDir, 'base'))).toHaveLength(1);
  // Stored without the zeros that fill most of its files (41 MB before issue 28).
  expect(statSync(pgliteTemplatePath()).size).toBeLessThan(12 * 1024 * 1024);
});

/** A directory of files ending in zeros (some long, some too short to be worth trimming) and an empty one. */
function zeroTailedDir(): { source: string; files: Record<string, Buffer> } {
  const source = join(dir, 'source');
  const files: Record<string, Buffer> = {
    PG_VERSION: Buffer.from('17\n'),
    'pg_wal/000000010000000000000001': Buffer.concat([Buffer.from('checkpoint'), Buffer.alloc(1024 * 1024)]),
    'base/5/1259': Buffer.concat([Buffer.alloc(8192, 7), Buffer.alloc(100)]),
    'base/5/empty': Buffer.alloc(0),
    'base/5/zeros': Buffer.alloc(65536),
  };
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(source, name)), { recursive: true });
    writeFileSync(join(source, name), content);
  }
  return { source, files };
}

test('files ending in zeros are archived without them and unpacked to their full content', async () => {
  const { source, files } = zeroTailedDir();
  const tarball = join(dir, 'trimmed.tar');
  packPgliteDataDir(source, tarball);
  expect(statSync(tarball).size).toBeLessThan(32 * 1024);
  const dataDir = join(dir, 'data');
  expect(await unpackPgliteDataDir(dataDir, tarball)).toBe(true);
  for (const [name, content] of Object.entries(files)) expect(readFileSync(join(dataDir, name)).equals(content)).toBe(true);
  // PGlite's own loader (an in-memory database) gets the same files at full size, as plain ustar.
  const plain = join(dir, 'plain.tar');
  writeFileSync(plain, Buffer.from(await (await plainPgliteArchive(tarball))!.arrayBuffer()));
  expect(statSync(plain).size).toBeGreaterThan(1024 * 1024 + 65536);
  const again = join(dir, 'again');
  expect(await unpackPgliteDataDir(again, plain)).toBe(true);
  for (const [name, content] of Object.entries(files)) expect(readFileSync(join(again, name)).equals(content)).toBe(true);
});

/** A PAX header with `records` then a sparse entry whose map is `map` and `stored` bytes of data follow. */
function sparseEntry(records: Record<string, string>, map: string, stored: number): Buffer {
  const text = Object.entries(records)
    .map(([key, value]) => {
      const body = ` ${key}=${value}\n`;
      return `${body.length + String(body.length + 2).length}${body}`;
    })
    .join('');
  const pax = Buffer.alloc(Math.ceil(text.length / 512) * 512);
  pax.write(text);
  const data = Buffer.alloc(512 + Math.ceil(stored / 512) * 512);
  data.write(map);
  return Buffer.concat([ustarHeader('PaxHeaders/x', text.length).fill('x', 156, 157), pax, ustarHeader('GNUSparseFile.0/x', 512 + stored), data]);
}

const sparse = (name: string, realsize: string) => ({
  'GNU.sparse.major': '1',
  'GNU.sparse.minor': '0',
  'GNU.sparse.name': name,
  'GNU.sparse.realsize': realsize,
});

test('a well-formed sparse entry is unpacked (the refusals below are not refusing everything)', async () => {
  const tarball = join(dir, 'good.tar');
  writeFileSync(tarball, Buffer.concat([sparseEntry(sparse('PG_VERSION', '4096'), '1\n0\n3\n', 3), Buffer.alloc(1024)]));
  const dataDir = join(dir, 'data');
  expect(await unpackPgliteDataDir(dataDir, tarball)).toBe(true);
  expect(statSync(join(dataDir, 'PG_VERSION')).size).toBe(4096);
});

test.each([
  ['a sparse file named outside the data directory', sparseEntry(sparse('../outside', '4096'), '1\n0\n3\n', 3)],
  ['a sparse region past the file size', sparseEntry(sparse('PG_VERSION', '2'), '1\n0\n3\n', 3)],
  ['a sparse region past the stored data', sparseEntry(sparse('PG_VERSION', '8192'), '1\n0\n4096\n', 3)],
  ['a malformed sparse map', sparseEntry(sparse('PG_VERSION', '4096'), '2\n0\nthree\n', 3)],
  ['another sparse format', sparseEntry({ ...sparse('PG_VERSION', '4096'), 'GNU.sparse.minor': '1' }, '1\n0\n3\n', 3)],
  ['an unknown extended attribute', sparseEntry({ linkpath: '/etc/passwd' }, '', 0)],
  ['an extended header with no entry after it', sparseEntry(sparse('PG_VERSION', '4096'), '1\n0\n3\n', 3).subarray(0, 1024)],
])('an archive holding %s is refused and nothing is written', async (_name, entry) => {
  const tarball = join(dir, 'bad.tar');
  writeFileSync(tarball, Buffer.concat([entry, Buffer.alloc(1024)]));
  const dataDir = join(dir, 'data');
  expect(await unpackPgliteDataDir(dataDir, tarball)).toBe(false);
  expect(await plainPgliteArchive(tarball)).toBeUndefined();
  expect(existsSync(dataDir)).toBe(false);
  expect(existsSync(join(dir, 'outside'))).toBe(false);
});
