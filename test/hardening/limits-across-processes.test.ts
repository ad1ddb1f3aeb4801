import { LimitCounterRepository } from '../../src/store/repositories/limit-counter-repository.js';
import { startPeerServer, startServer, type PeerServer, type TestServer } from '../support/app.js';
import { bootstrapAdmin, call, requestFrom } from '../modules/users/users-fixtures.js';

const LIMITS = { WEBHOOK_ROUTE_LIMIT: '4', WEBHOOK_ROUTE_WINDOW_SECONDS: '60', SIGNIN_MAX_FAILURES: '4', SIGNIN_NAME_MAX_FAILURES: '10' };
let serverA: TestServer | undefined;
let serverB: PeerServer | undefined;

/**
 * Server B shares server A's database: on PostgreSQL through its own pool (what two processes or two
 * replicas do), on PGlite through the same embedded instance (PGlite cannot be shared between processes).
 */
beforeAll(async () => {
  serverA = await startServer(LIMITS);
  serverB = await startPeerServer(serverA, LIMITS);
});
afterAll(async () => {
  await serverB?.close();
  await serverA?.close();
});

async function createRouteOn(url: string): Promise<number> {
  const response = await fetch(`${url}/routes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  await response.arrayBuffer();
  return response.status;
}

test('the route-creation limit is one allowance over both servers', async () => {
  const statuses = [];
  for (let i = 0; i < 6; i++) statuses.push(await createRouteOn(i % 2 === 0 ? serverA!.url : serverB!.url));
  expect(statuses).toEqual([201, 201, 201, 201, 429, 429]);
});

test('failed sign-ins for one name from one address count on both servers', async () => {
  const admin = await bootstrapAdmin(serverA!);
  expect(
    (await call(serverA!, 'POST', '/api/users', { token: admin.token, body: { name: 'shared', password: 'shared-password', isAdmin: false } })).status,
  ).toBe(200);
  const statuses = [];
  for (let i = 0; i < 5; i++) {
    const server = i % 2 === 0 ? serverA! : serverB!;
    statuses.push((await requestFrom(server as TestServer, '127.0.0.20', 'POST', '/api/auth', { name: 'shared', password: 'wrong-password' })).status);
  }
  expect(statuses).toEqual([401, 401, 401, 401, 429]);
});

describe('the counters expire', () => {
  test('a window that has ended starts afresh, and counting sweeps expired rows as it goes', async () => {
    const knex = serverA!.app.db.knex;
    const counters = new LimitCounterRepository(knex);
    await knex('limit_counters').insert(
      Array.from({ length: 40 }, (_, i) => ({ key: `test-expired-${i}`, count: 3, expires_at: knex.raw("now() - interval '1 second'") })),
    );
    expect((await counters.count(['test-live'], 60)).map((row) => row.count)).toEqual([1]);
    expect((await counters.count(['test-live'], 60)).map((row) => row.count)).toEqual([2]);
    // Every 16th count of a repository sweeps up to 64 expired rows.
    for (let i = 0; i < 14; i++) await counters.count(['test-live'], 60);
    const [{ n } = { n: -1 }] = await knex('limit_counters').where('key', 'like', 'test-expired-%').count({ n: '*' });
    expect(Number(n)).toBe(0);
    // The live key's window ends: the next count starts a fresh one.
    await knex('limit_counters')
      .where({ key: 'test-live' })
      .update({ expires_at: knex.raw("now() - interval '1 second'") });
    const [fresh] = await counters.count(['test-live'], 60);
    expect(fresh?.count).toBe(1);
    expect(fresh!.expiresAt.getTime()).toBeGreaterThan(Date.now() + 50_000);
  });
});
