/** `npm run migrate`: applies pending migrations to DATABASE_URL or the PGlite DATA_DIR, then exits (3 when the store cannot be opened). */
import { loadConfig } from '../src/config.js';
import { describeStartupError } from '../src/startup-errors.js';
import { databaseOptionsOf, migrateLatest, openDatabase } from '../src/store/database.js';

const config = loadConfig();
const db = await openDatabase(databaseOptionsOf(config)).catch((error: unknown) => {
  process.stderr.write(`cannot open the store: ${describeStartupError(error, 'database', config)}\n`);
  process.exit(3);
});
try {
  await migrateLatest(db.knex);
  console.log(`migrations applied (${db.kind})`);
} finally {
  await db.close();
}
