import { pino } from 'pino';
import { build, type App } from '../../../src/server/build.js';
import { loadConfig } from '../../../src/config.js';
import { openTestDatabase } from '../../support/app.js';

/**
 * The log of a busy sign-in session, captured at the most verbose level with no redaction
 * configured: whatever the code itself puts into log lines shows up here.
 */
const lines: string[] = [];
let app: App;
let url: string;
let drop: () => Promise<void>;

const SECRETS = {
  adminPassword: 'configured-admin-secret',
  userPassword: 'first-user-secret',
  newPassword: 'changed-user-secret',
  wrongPassword: 'wrong-guess-secret',
};

async function send(method: string, path: string, body?: unknown, token?: string, raw?: string) {
  const headers: Record<string, string> = {};
  if (body !== undefined || raw !== undefined) headers['content-type'] = 'application/json';
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(`${url}${path}`, { method, headers, body: raw ?? (body === undefined ? undefined : JSON.stringify(body)) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

beforeAll(async () => {
  const database = await openTestDatabase();
  drop = database.drop;
  const config = loadConfig({ MIGRATE: 'false', LOG_LEVEL: 'trace', ADMIN_USERNAME: 'operator', ADMIN_PASSWORD: SECRETS.adminPassword });
  const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
  app = await build(config, { database: database.db, logger });
  url = `http://127.0.0.1:${await app.listen(0, '127.0.0.1')}`;
});
afterAll(async () => {
  await app?.close();
  await drop?.();
});

test('sign-ins, password changes and bad requests log no password, hash or token', async () => {
  const operator = await send('POST', '/api/auth', { name: 'operator', password: SECRETS.adminPassword });
  expect(operator.status).toBe(200);
  const created = await send('POST', '/api/users', { name: 'alice', password: SECRETS.userPassword, isAdmin: false }, operator.body.accessToken);
  expect(created.status).toBe(200);
  const alice = await send('POST', '/api/auth', { name: 'alice', password: SECRETS.userPassword });
  expect((await send('POST', '/api/auth', { name: 'alice', password: SECRETS.wrongPassword })).status).toBe(401);
  const changed = await send(
    'PUT',
    `/api/users/${alice.body.user.id}`,
    { password: SECRETS.newPassword, oldPassword: SECRETS.userPassword },
    alice.body.accessToken,
  );
  expect(changed.status).toBe(200);
  expect(
    (await send('PUT', `/api/users/${alice.body.user.id}`, { password: SECRETS.newPassword, oldPassword: SECRETS.wrongPassword }, alice.body.accessToken))
      .status,
  ).toBe(400);
  expect((await send('POST', '/api/auth', undefined, undefined, `{"name":"alice","password":"${SECRETS.wrongPassword}"`)).status).toBe(400);
  expect((await send('GET', '/api/users', undefined, `${alice.body.accessToken}x`)).status).toBe(401);

  const log = lines.join('');
  // The log is not empty: one line per request with route template and status.
  const requests = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request');
  expect(requests).toEqual(expect.arrayContaining([expect.objectContaining({ method: 'POST', route: '/api/auth', status: 200 })]));
  expect(requests).toEqual(expect.arrayContaining([expect.objectContaining({ method: 'PUT', route: '/api/users/{id}', status: 200 })]));
  expect(log).toContain('created the configured admin');
  for (const secret of Object.values(SECRETS)) expect(log).not.toContain(secret);
  for (const token of [operator.body.accessToken, alice.body.accessToken]) {
    expect(log).not.toContain(token);
    expect(log).not.toContain(String(token).split('.')[2]);
  }
  expect(log).not.toMatch(/\$argon2/);
});
