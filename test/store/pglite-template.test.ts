import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/database.js';
import { migrationSource } from '../../src/store/migrations/index.js';
import { unpackPgliteDataDir } from '../../src/store/pglite/init.js';
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
