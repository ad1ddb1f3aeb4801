import { migrateLatest, migrateRollbackAll } from '../../src/store/database.js';
import { migrationSource } from '../../src/store/migrations/index.js';
import { openTestDatabase } from '../support/app.js';

test('every migration rolls back and re-applies cleanly around existing data', async () => {
  const { db, drop } = await openTestDatabase();
  try {
    await db.knex('users').insert({ name: 'kept', name_folded: 'kept', password_hash: 'x', settings: JSON.stringify({}) });
    await migrateRollbackAll(db.knex);
    const tables = await db.knex.raw("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public' AND table_name NOT LIKE 'knex_%'");
    expect(tables.rows[0].n).toBe(0);
    await migrateLatest(db.knex);
    const [completed] = await db.knex.migrate.list({ migrationSource });
    expect(completed.length).toBe((await migrationSource.getMigrations([])).length);
    expect(await db.knex('users').count('* as n').first()).toEqual({ n: 0 });
  } finally {
    await db.close();
    await drop();
  }
});
