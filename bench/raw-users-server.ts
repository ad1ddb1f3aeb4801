/**
 * The baseline of `npm run bench`: bare node:http + a pg Pool answering GET /api/users/:id with the
 * same query and JSON as the real server, with no routing, validation or auth.
 */
import http from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const server = http.createServer(async (req, res) => {
  const id = (req.url ?? '').slice('/api/users/'.length);
  const { rows } = await pool.query('SELECT id, name, is_admin, onboarding_done, profile_picture, settings FROM users WHERE id = $1', [id]);
  const row = rows[0];
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
