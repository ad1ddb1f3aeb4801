/**
 * The baseline of `npm run bench`: bare node:http answering GET /api/users/:id with the same query and
 * JSON as the real server, with no routing, validation or auth. On PostgreSQL (DATABASE_URL) through
 * a pg Pool; with `BENCH_STORE=pglite`, from a PGlite instance in this process (DATA_DIR, opened with
 * the server's own engine settings) holding the same user (`BENCH_USER`, its JSON), as an embedded
 * store is used. On PostgreSQL it sends the query as a named (prepared) statement, as the server sends
 * its read: the ratio is then our stack's cost, not PostgreSQL parsing and planning one side's SQL per
 * request. BENCH_RAW_PREPARED=0 sends it unnamed, as a plain `pool.query(text, values)` (a reference).
 */
import http from 'node:http';
import type { BenchUser } from './users-read.js';

const SQL = 'SELECT id, name, is_admin, onboarding_done, profile_picture, settings FROM users WHERE id = $1';
type Row = { id: string; name: string; is_admin: boolean; onboarding_done: boolean; profile_picture: string; settings: unknown };
const query = process.env.BENCH_STORE === 'pglite' ? await openPglite() : await openPostgres();

const server = http.createServer(async (req, res) => {
  const id = (req.url ?? '').slice('/api/users/'.length);
  const row = (await query(id))[0];
  if (!row) {
    res.writeHead(404).end();
    return;
  }
  const body = JSON.stringify({
    id: row.id,
    name: row.name,
    isAdmin: row.is_admin,
    onboardingDone: row.onboarding_done,
    settings: row.settings,
    profilePicture: row.profile_picture,
  });
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});

async function openPostgres(): Promise<(id: string) => Promise<Row[]>> {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  // BENCH_RAW_PREPARED=0: unnamed, parsed and planned by PostgreSQL per request (a reference only).
  if (process.env.BENCH_RAW_PREPARED === '0') return async (id) => (await pool.query<Row>(SQL, [id])).rows;
  return async (id) => (await pool.query<Row>({ name: 'raw.findById', text: SQL, values: [id] })).rows;
}

async function openPglite(): Promise<(id: string) => Promise<Row[]>> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { initPgliteDataDir, pgliteStartParams, preferBaselineWasm } = await import('../src/store/pglite/init.js');
  const dataDir = process.env.DATA_DIR ?? '';
  if (!dataDir) throw new Error('BENCH_STORE=pglite needs DATA_DIR');
  preferBaselineWasm();
  const startParams = pgliteStartParams(16);
  await initPgliteDataDir(dataDir, startParams);
  const pglite = await PGlite.create({ dataDir, startParams });
  const user = JSON.parse(process.env.BENCH_USER ?? '{}') as BenchUser;
  // The users table as the server's migration makes it (the columns read, the primary key).
  await pglite.exec(`CREATE TABLE users (id uuid PRIMARY KEY, name text NOT NULL, password_hash text NOT NULL, is_admin boolean NOT NULL,
    onboarding_done boolean NOT NULL, profile_picture text NOT NULL, settings jsonb NOT NULL)`);
  await pglite.query('INSERT INTO users VALUES ($1, $2, $3, $4, $5, $6, $7)', [
    user.id,
    user.name,
    'x',
    user.isAdmin,
    user.onboardingDone,
    user.profilePicture,
    JSON.stringify(user.settings),
  ]);
  return async (id) => (await pglite.query<Row>(SQL, [id])).rows;
}
// Exits normally on SIGTERM, so a CPU profile (node --cpu-prof) is written.
process.on('SIGTERM', () => process.exit(0));
