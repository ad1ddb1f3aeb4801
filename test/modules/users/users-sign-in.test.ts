import { randomUUID } from 'node:crypto';
import { startServer, type TestServer } from '../../support/app.js';
import { ADMIN, bootstrapAdmin, call, createAccount, requestFrom, signIn, type Account } from './users-fixtures.js';

const UNAUTHORIZED = { statusCode: 401, message: 'Unauthorized' };
const MAX_FAILURES = 3;

let server: TestServer;
let admin: Account;
let bob: Account;
beforeAll(async () => {
  server = await startServer({ SIGNIN_MAX_FAILURES: String(MAX_FAILURES) });
  admin = await bootstrapAdmin(server);
  bob = await createAccount(server, admin, 'bob');
});
afterAll(() => server?.close());

function decode(part: string | undefined): Record<string, unknown> {
  return JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8'));
}

test('GET /api names the service and the interface version, without credentials', async () => {
  const response = await call(server, 'GET', '/api');
  expect(response.status).toBe(200);
  expect(response.body).toEqual({ name: 'contract-first-server', version: '1.0.0' });
});

describe('POST /api/auth', () => {
  test('answers an EdDSA JWT for the user, valid for ACCESS_TOKEN_TTL (30 days), with the user record', async () => {
    const response = await call(server, 'POST', '/api/auth', { body: { name: 'bob', password: 'bob-password' } });
    expect(response.status).toBe(200);
    expect(response.body.user).toMatchObject({ id: bob.id, name: 'bob', isAdmin: false });
    const [header, payload] = String(response.body.accessToken).split('.');
    expect(decode(header)).toMatchObject({ alg: 'EdDSA', typ: 'JWT' });
    const claims = decode(payload) as { sub: string; aud: string; iat: number; exp: number };
    expect(claims).toMatchObject({ sub: bob.id, aud: 'account' });
    expect(claims.exp - claims.iat).toBe(30 * 24 * 3600);
  });

  test.each([
    ['a wrong password', { name: 'bob', password: 'not-bobs-password' }],
    ['an unknown name', { name: 'nobody', password: 'bob-password' }],
    ['an empty password', { name: 'bob', password: '' }],
  ])('with %s answers exactly the documented 401 body', async (_case, body) => {
    const response = await call(server, 'POST', '/api/auth', { body });
    expect(response.status).toBe(401);
    expect(response.body).toEqual(UNAUTHORIZED);
  });

  test('with a missing field answers 400 naming it', async () => {
    const response = await call(server, 'POST', '/api/auth', { body: { name: 'bob' } });
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([{ field: 'password', message: expect.any(String) }]);
  });

  test('a success forgets earlier failures of that name', async () => {
    await signIn(server, 'bob', 'bob-password');
    for (let round = 0; round < 2; round += 1) {
      for (let i = 0; i < MAX_FAILURES - 1; i += 1) {
        expect((await call(server, 'POST', '/api/auth', { body: { name: 'bob', password: 'wrong-password' } })).status).toBe(401);
      }
      await signIn(server, 'bob', 'bob-password');
    }
  });
});

describe('bearer tokens', () => {
  const cases: Array<[string, () => Promise<string | undefined> | string | undefined]> = [
    ['no Authorization header', () => undefined],
    ['a scheme without a token', () => 'Bearer'],
    ['a token that is not a JWT', () => 'Bearer not-a-token'],
    ['three parts of garbage', () => 'Bearer a.b.c'],
    ['an expired token', () => `Bearer ${server.app.tokens.sign({ sub: admin.id, aud: 'account' }, -10)}`],
    ['a token of another audience', () => `Bearer ${server.app.tokens.sign({ sub: admin.id, aud: 'publishing' }, 600)}`],
    [
      'a tampered payload',
      () => {
        const [header, , signature] = admin.token.split('.');
        const forged = Buffer.from(JSON.stringify({ sub: bob.id, aud: 'account', iat: 0, exp: 4102444800 })).toString('base64url');
        return `Bearer ${header}.${forged}.${signature}`;
      },
    ],
    ['a token for a user id that never existed', () => `Bearer ${server.app.tokens.sign({ sub: randomUUID(), aud: 'account' }, 600)}`],
    ['the Basic scheme with the right password', () => `Basic ${Buffer.from(`${ADMIN.name}:${ADMIN.password}`).toString('base64')}`],
    ['a valid token under another scheme', () => `Token ${admin.token}`],
  ];

  test.each(cases)('%s → 401 with the documented body', async (_case, authorization) => {
    const value = await authorization();
    const response = await call(server, 'GET', '/api/users', { headers: value === undefined ? {} : { authorization: value } });
    expect(response.status).toBe(401);
    expect(response.body).toEqual(UNAUTHORIZED);
  });

  test('the scheme name is case-insensitive (RFC 7235)', async () => {
    const response = await call(server, 'GET', '/api/users', { headers: { authorization: `bearer ${admin.token}` } });
    expect(response.status).toBe(200);
  });

  test('the token of a deleted user stops working everywhere', async () => {
    const gone = await createAccount(server, admin, 'gone');
    expect((await call(server, 'GET', `/api/users/${gone.id}`, { token: gone.token })).status).toBe(200);
    expect((await call(server, 'DELETE', `/api/users/${gone.id}`, { token: admin.token })).status).toBe(200);
    for (const [method, path, body] of [
      ['GET', `/api/users/${gone.id}`, undefined],
      ['PUT', `/api/users/${gone.id}`, { onboardingDone: true }],
      ['DELETE', `/api/users/${gone.id}`, undefined],
      ['GET', `/api/users/${bob.id}`, undefined],
    ] as const) {
      const response = await call(server, method, path, { token: gone.token, body });
      expect([method, path, response.status, response.body]).toEqual([method, path, 401, UNAUTHORIZED]);
    }
  });
});

describe('throttling failed sign-ins', () => {
  test(`after ${MAX_FAILURES} failures for one name, even the right password answers 429 with Retry-After`, async () => {
    await createAccount(server, admin, 'victim');
    for (let i = 0; i < MAX_FAILURES; i += 1) {
      expect((await call(server, 'POST', '/api/auth', { body: { name: 'victim', password: 'guess-guess' } })).status).toBe(401);
    }
    const blocked = await call(server, 'POST', '/api/auth', { body: { name: 'victim', password: 'victim-password' } });
    expect(blocked.status).toBe(429);
    expect(blocked.body).toEqual({ statusCode: 429, message: 'Too Many Requests', error: 'Too Many Requests' });
    const retryAfter = Number(blocked.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(300);
    // Other names from the same address are not affected.
    await signIn(server, 'bob', 'bob-password');
  });

  test('unknown names are throttled the same way, so 429 does not reveal which names exist', async () => {
    for (let i = 0; i < MAX_FAILURES; i += 1) {
      expect((await call(server, 'POST', '/api/auth', { body: { name: 'ghost', password: 'guess-guess' } })).status).toBe(401);
    }
    expect((await call(server, 'POST', '/api/auth', { body: { name: 'ghost', password: 'guess-guess' } })).status).toBe(429);
  });

  test('one address that fails across many names is throttled, other addresses are not', async () => {
    const addressLimit = MAX_FAILURES * 4;
    for (let i = 0; i < addressLimit; i += 1) {
      const response = await requestFrom(server, '127.0.0.2', 'POST', '/api/auth', { name: `spray-${i}`, password: 'guess-guess' });
      expect(response.status).toBe(401);
    }
    const blocked = await requestFrom(server, '127.0.0.2', 'POST', '/api/auth', { name: 'bob', password: 'bob-password' });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const elsewhere = await requestFrom(server, '127.0.0.3', 'POST', '/api/auth', { name: 'bob', password: 'bob-password' });
    expect(elsewhere.status).toBe(200);
  });
});
