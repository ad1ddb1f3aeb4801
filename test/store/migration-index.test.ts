import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../src/server/paths.js';
import { migrationSource } from '../../src/store/migrations/index.js';

/**
 * The migrations index (src/store/migrations/index.ts) is a hand-kept list, since a bundle needs
 * static imports: a migration file left out of it would never run, anywhere. Every file of the
 * folder is listed under its own name, and every name is `YYYYMMDDHHmmss_snake_name`.
 */
test('every migration file is in the index under its own name, and nothing else is', async () => {
  const files = readdirSync(join(ROOT, 'src/store/migrations'))
    .filter((name) => name !== 'index.ts')
    .map((name) => name.replace(/\.ts$/, ''))
    .sort();
  const listed = await migrationSource.getMigrations([]);
  expect(listed).toEqual(files);
  for (const name of listed) {
    expect(name).toMatch(/^\d{14}_[a-z0-9]+(_[a-z0-9]+)*$/);
    const migration = (await migrationSource.getMigration(name)) as { up?: unknown; down?: unknown };
    expect({ name, up: typeof migration.up, down: typeof migration.down }).toEqual({ name, up: 'function', down: 'function' });
  }
});
