/**
 * `cfs-server migrate` (compiled: `node dist/src/tools/migrate.js`; in a checkout `npm run migrate`):
 * runs the pending migrations on DATABASE_URL or the PGlite DATA_DIR and exits 0 — as a Kubernetes
 * Job or init container before a release's servers start with MIGRATE=false (docs/operations.md,
 * Migrations). Several at once are safe: they take turns on the migration lock and only the first
 * has work to do. Any failure is one line on stderr: exit 2 for a bad setting, 3 when the store
 * cannot be opened, 1 when the migrations fail.
 */
import { ConfigError, loadConfig, type Config } from '../config.js';
import { describeStartupError } from '../startup-errors.js';
import { databaseOptionsOf, migrate, openDatabase } from '../store/database.js';

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`configuration error: ${error.message}\n`);
  process.exit(2);
}
const settings = config;
const db = await openDatabase(databaseOptionsOf(config)).catch((error: unknown) => {
  process.stderr.write(`cannot open the store: ${describeStartupError(error, 'database', settings)}\n`);
  process.exit(3);
});
try {
  const { applied, unknown } = await migrate(db);
  process.stdout.write(applied.length === 0 ? `migrations: already up to date (${db.kind})\n` : `migrations applied (${db.kind}): ${applied.join(', ')}\n`);
  if (unknown.length > 0)
    process.stdout.write(`the database also has migrations this release does not know (a newer release ran them): ${unknown.join(', ')}\n`);
} catch (error) {
  process.stderr.write(`migrations failed: ${describeStartupError(error, 'database', settings)}\n`);
  process.exitCode = 1;
} finally {
  await db.close().catch(() => undefined);
}
