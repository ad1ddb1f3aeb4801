import { startServer, type TestServer } from '../../support/app.js';
import { call, signIn } from './users-fixtures.js';

describe('first run, on an empty database', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server?.close());

  test('anyone may create users while no admin exists, and a plain user does not close the door', async () => {
    const early = await call(server, 'POST', '/api/users', { body: { name: 'early', password: 'early-password', isAdmin: false } });
    expect(early.status).toBe(200);
    expect(early.body).toMatchObject({ name: 'early', isAdmin: false, onboardingDone: false, profilePicture: '' });
    const again = await call(server, 'POST', '/api/users', { body: { name: 'early-2', password: 'early-password', isAdmin: false } });
    expect(again.status).toBe(200);
  });

  test('the first sign-in needs a password of at least 8 characters when it would create the admin', async () => {
    const response = await call(server, 'POST', '/api/auth', { body: { name: 'root', password: 'short' } });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ statusCode: 400, message: 'Bad Request', error: 'Bad Request' });
    expect(response.body.details).toEqual([expect.objectContaining({ field: 'password' })]);
  });

  test('an existing plain user signs in normally and does not become admin', async () => {
    const early = await signIn(server, 'early', 'early-password');
    const me = await call(server, 'GET', `/api/users/${early.id}`, { token: early.token });
    expect(me.body.isAdmin).toBe(false);
  });

  test('signing in with an unknown name creates that user as the first admin', async () => {
    const root = await signIn(server, 'root', 'root-password-1');
    const me = await call(server, 'GET', `/api/users/${root.id}`, { token: root.token });
    expect(me.body).toMatchObject({ name: 'root', isAdmin: true });
    const again = await signIn(server, 'root', 'root-password-1');
    expect(again.id).toBe(root.id);
  });

  test('once an admin exists, an unknown name is a plain 401 and creating users needs an admin', async () => {
    const unknown = await call(server, 'POST', '/api/auth', { body: { name: 'second-root', password: 'whatever-password' } });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual({ statusCode: 401, message: 'Unauthorized' });
    const anonymous = await call(server, 'POST', '/api/users', { body: { name: 'late', password: 'late-password', isAdmin: false } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ statusCode: 401, message: 'Unauthorized' });
    const plain = await signIn(server, 'early', 'early-password');
    const forbidden = await call(server, 'POST', '/api/users', { token: plain.token, body: { name: 'late', password: 'late-password', isAdmin: false } });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({ statusCode: 403, message: 'Forbidden', error: 'Forbidden' });
  });

  test('creating an admin anonymously while none exists closes the bootstrap', async () => {
    // Back to an empty database without paying for another server.
    await server.app.db.knex('users').delete();
    const admin = await call(server, 'POST', '/api/users', { body: { name: 'boss', password: 'boss-password', isAdmin: true } });
    expect(admin.status).toBe(200);
    expect(admin.body.isAdmin).toBe(true);
    const late = await call(server, 'POST', '/api/users', { body: { name: 'late', password: 'late-password', isAdmin: true } });
    expect(late.status).toBe(401);
    const boss = await signIn(server, 'boss', 'boss-password');
    expect(boss.id).toBe(admin.body.id);
  });
});

describe('ADMIN_USERNAME and ADMIN_PASSWORD', () => {
  test('create an admin at start, and a restart with the name taken keeps it as is', async () => {
    const server = await startServer({ ADMIN_USERNAME: 'operator', ADMIN_PASSWORD: 'operator-password' });
    try {
      const operator = await signIn(server, 'operator', 'operator-password');
      const list = await call(server, 'GET', '/api/users', { token: operator.token });
      expect(list.status).toBe(200);
      expect(list.body).toEqual([expect.objectContaining({ name: 'operator', isAdmin: true })]);
      // The bootstrap is over: an unknown name no longer becomes admin.
      const stranger = await call(server, 'POST', '/api/auth', { body: { name: 'stranger', password: 'stranger-password' } });
      expect(stranger.status).toBe(401);
      // A second start over the same database (another process, a restart) finds the name taken.
      expect(await server.app.users.ensureAdmin('operator', 'another-password')).toBe(false);
      await signIn(server, 'operator', 'operator-password');
    } finally {
      await server.close();
    }
  });
});
