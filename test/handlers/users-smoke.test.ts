import { startServer, type TestServer } from '../support/app.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

test('the first sign-in creates the admin, who reads themself', async () => {
  const signIn = await server.request('POST', '/api/auth', { body: { name: 'root', password: 'rootpass1' } });
  expect(signIn.status).toBe(200);
  const me = await server.request('GET', `/api/users/${signIn.body.user.id}`, { token: signIn.body.accessToken });
  expect(me.body).toMatchObject({ name: 'root', isAdmin: true });
});
