/**
 * `npm run publishing:create-superuser -- --email root@example.com --password '…' [--name 'Root']`
 * (compiled: `node dist/src/tools/create-superuser.js --email …`, as in the container image).
 * Creates a superuser of the Article Publishing API in the configured store: PostgreSQL when
 * DATABASE_URL is set, the embedded PGlite in DATA_DIR otherwise (a server using that PGlite
 * directory holds its lock: stop it first, the script refuses to share it). Runs pending migrations
 * unless MIGRATE=false. Exits 0 when created, 1 when the email is already taken, 2 on bad arguments,
 * 3 when the store cannot be opened.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.js';
import { AppError } from '../errors.js';
import { describeStartupError } from '../startup-errors.js';
import { databaseOptionsOf, migrate, openDatabase } from '../store/database.js';
import { TokenService } from '../auth/token-service.js';
import { WriterService } from '../services/publishing/writer-service.js';
import { throttleOptionsOf } from '../services/sign-in-throttle.js';

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: npm run publishing:create-superuser -- --email <email> --password <password> [--name <name>]\n`);
  process.exit(2);
}

let values: { email?: string; password?: string; name?: string };
try {
  ({ values } = parseArgs({ options: { email: { type: 'string' }, password: { type: 'string' }, name: { type: 'string' } }, strict: true }));
} catch (error) {
  usage(error instanceof Error ? error.message : String(error));
}
if (!values.email || !values.password) usage('--email and --password are required');

let config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) usage(`configuration error: ${error.message}`);
  throw error;
}
const settings = config;
const db = await openDatabase(databaseOptionsOf(config)).catch((error: unknown) => {
  process.stderr.write(`cannot open the store: ${describeStartupError(error, 'database', settings)}\n`);
  process.exit(3);
});
try {
  if (config.migrate) await migrate(db);
  const writers = new WriterService(db.knex, await TokenService.create(db.knex), config.accessTokenTtlSeconds, throttleOptionsOf(config));
  const created = await writers.ensureSuperuser(values.email, values.password, values.name ?? 'Superuser');
  process.stdout.write(created ? `created superuser ${values.email}\n` : `a user with email ${values.email} already exists; nothing changed\n`);
  process.exitCode = created ? 0 : 1;
} catch (error) {
  if (error instanceof AppError && error.code === 'invalid_argument') {
    process.stderr.write(`invalid: ${error.violations.map((v) => `${v.field} ${v.message}`).join('; ')}\n`);
    process.exitCode = 2;
  } else {
    throw error;
  }
} finally {
  await db.close();
}
