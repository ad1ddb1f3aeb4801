/** `npm run migrate`: applies pending migrations to DATABASE_URL or the PGlite DATA_DIR, then exits. */
import { loadConfig } from '../src/config.js';
import { migrateLatest, openDatabase } from '../src/store/database.js';

const config = loadConfig();
const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
try {
  await migrateLatest(db.knex);
  console.log(`migrations applied (${db.kind})`);
} finally {
  await db.close();
}
