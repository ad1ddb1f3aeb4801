import { startServer, type TestServer } from '../support/app.js';
import { createRoute, rawRequest } from '../modules/webhooks/support.js';
import { scrape, valueOf } from './metrics-support.js';
import { budget } from '../support/budget.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({
    ADMIN_USERNAME: 'admin',
    ADMIN_PASSWORD: 'change-me-please',
    SIGNIN_MAX_FAILURES: '2',
    WEBHOOK_MAX_BODY: '16',
    WEBHOOK_MAX_REQUESTS: '2',
  });
}, budget(10_000));
afterAll(() => server?.close());

const signIns = 'cfs_sign_in_attempts_total';
const captures = 'cfs_webhook_captures_total';

test('every series is exported at zero before anything happens, so rates work from the first scrape', async () => {
  const samples = await scrape(server.url);
  for (const api of ['users', 'publishing']) {
    for (const outcome of ['success', 'failure', 'throttled']) expect(valueOf(samples, signIns, { api, outcome })).toBeDefined();
  }
  for (const outcome of ['stored', 'truncated', 'dropped']) expect(valueOf(samples, captures, { outcome })).toBeDefined();
});

test('sign-ins are counted by API and outcome: success, failure, and throttled before any password check', async () => {
  const before = await scrape(server.url);
  const count = (samples: typeof before, api: string, outcome: string) => valueOf(samples, signIns, { api, outcome }) ?? 0;
  const auth = (password: string) => server.request('POST', '/api/auth', { body: { name: 'admin', password } });
  expect((await auth('change-me-please')).status).toBe(200);
  expect((await auth('wrong-password-1')).status).toBe(401);
  expect((await auth('wrong-password-2')).status).toBe(401);
  expect((await auth('wrong-password-3')).status).toBe(429);
  const login = await server.request('POST', '/v1/writers/login', { body: { email: 'nobody@example.com', password: 'wrong-password' } });
  expect(login.status).toBe(401);

  const after = await scrape(server.url);
  expect(count(after, 'users', 'success') - count(before, 'users', 'success')).toBe(1);
  expect(count(after, 'users', 'failure') - count(before, 'users', 'failure')).toBe(2);
  expect(count(after, 'users', 'throttled') - count(before, 'users', 'throttled')).toBe(1);
  expect(count(after, 'publishing', 'failure') - count(before, 'publishing', 'failure')).toBe(1);
});

test('captures are counted as stored, truncated (body over WEBHOOK_MAX_BODY) and dropped (over WEBHOOK_MAX_REQUESTS)', async () => {
  const before = await scrape(server.url);
  const count = (samples: typeof before, outcome: string) => valueOf(samples, captures, { outcome }) ?? 0;
  const route = await createRoute(server);
  const send = (body: string) => rawRequest(`${server.url}/${route.routeId}`, 'POST', [['Content-Type', 'text/plain']], body);
  // Sent one after another: each is acknowledged once committed, so the third drops the first.
  expect((await send('short')).status).toBe(200);
  expect((await send('a body longer than sixteen bytes')).status).toBe(200);
  expect((await send('short again')).status).toBe(200);

  const after = await scrape(server.url);
  expect(count(after, 'stored') - count(before, 'stored')).toBe(3);
  expect(count(after, 'truncated') - count(before, 'truncated')).toBe(1);
  expect(count(after, 'dropped') - count(before, 'dropped')).toBe(1);
});
