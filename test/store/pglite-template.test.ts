import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/database.js';
import { migrationSource } from '../../src/store/migrations/index.js';
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

const manifestOf = (tarball: string) => JSON.parse(readFileSync(tarball.replace(/\.tar\.gz$/, '.json'), 'utf8')) as Record<string, unknown>;

/** A copy of the suite's template whose manifest is changed by `edit`. */
function copyWith(edit: (manifest: Record<string, unknown>) => void): string {
  const tarball = join(dir, 'pglite-template.tar.gz');
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
  const tarball = join(dir, 'pglite-template.tar.gz');
  copyFileSync(pgliteTemplatePath(), tarball);
  expect(await readPgliteTemplate(tarball)).toBeUndefined();
});

test('an unchanged copy of a template is used (the checks above are what refuse the others)', async () => {
  expect(await readPgliteTemplate(copyWith(() => undefined))).toBeInstanceOf(Blob);
});
