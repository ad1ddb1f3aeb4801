import { startServer, type TestServer } from '../support/app.js';
import { createActors, SUPERUSER } from '../modules/publishing/support.js';
import { bootstrapAdmin, call, requestFrom, type Account } from '../modules/users/users-fixtures.js';

const MAX_FAILURES = 5;
const NAME_MAX_FAILURES = 12;
let server: TestServer;
let superuserToken: string;
let admin: Account;

beforeAll(async () => {
  server = await startServer({
    SUPERUSER_EMAIL: SUPERUSER.email,
    SUPERUSER_PASSWORD: SUPERUSER.password,
    SIGNIN_MAX_FAILURES: String(MAX_FAILURES),
    SIGNIN_NAME_MAX_FAILURES: String(NAME_MAX_FAILURES),
  });
  superuserToken = (await createActors(server)).tokens.superuser;
  admin = await bootstrapAdmin(server);
});
afterAll(() => server?.close());

async function newWriter(email: string, password = 'right-password-1'): Promise<void> {
  const created = await server.request('POST', '/v1/writers', { token: superuserToken, body: { email, password, name: email.split('@')[0], role: 'writer' } });
  expect(created.status).toBe(201);
}

describe('POST /v1/writers/login is throttled like /api/auth', () => {
  test('40 concurrent wrong passwords: at most the limit are checked, the rest and then the right password from that address get 429 + Retry-After (problem details)', async () => {
    await newWriter('target@example.com');
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        requestFrom(server, '127.0.0.4', 'POST', '/v1/writers/login', { email: 'target@example.com', password: 'wrong-password' }),
      ),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(MAX_FAILURES);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(40 - MAX_FAILURES);

    const blocked = await requestFrom(server, '127.0.0.4', 'POST', '/v1/writers/login', { email: 'target@example.com', password: 'right-password-1' });
    expect(blocked.status).toBe(429);
    expect(blocked.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(blocked.body).toMatchObject({
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      detail: expect.stringMatching(/too many failed sign-ins/i),
    });
    const retryAfter = Number(blocked.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(300);
    // The owner, from their own address, is not locked out by the attacker's guesses.
    const owner = await requestFrom(server, '127.0.0.5', 'POST', '/v1/writers/login', { email: 'target@example.com', password: 'right-password-1' });
    expect(owner.status).toBe(200);
  });

  test(`failures for one email from many addresses stop at the per-name ceiling (${NAME_MAX_FAILURES}), then every address gets 429`, async () => {
    await newWriter('popular@example.com');
    const statuses: number[] = [];
    for (let i = 0; i < NAME_MAX_FAILURES + 3; i++) {
      // Three guesses per address, under the per name-and-address limit.
      const from = `127.0.1.${Math.floor(i / 3) + 1}`;
      statuses.push((await requestFrom(server, from, 'POST', '/v1/writers/login', { email: 'popular@example.com', password: 'wrong-password' })).status);
    }
    expect(statuses.filter((status) => status === 401)).toHaveLength(NAME_MAX_FAILURES);
    expect(statuses.slice(NAME_MAX_FAILURES)).toEqual([429, 429, 429]);
    expect((await requestFrom(server, '127.0.1.99', 'POST', '/v1/writers/login', { email: 'popular@example.com', password: 'right-password-1' })).status).toBe(
      429,
    );
  });

  test('the email is counted trimmed and case-folded: failures as `Folded@Example.COM ` lock out `folded@example.com` from that address', async () => {
    await newWriter('folded@example.com');
    const spellings = ['Folded@Example.COM', 'FOLDED@example.com', ' folded@example.com', 'folded@EXAMPLE.com ', 'Folded@example.com'];
    for (const email of spellings)
      expect((await requestFrom(server, '127.0.0.6', 'POST', '/v1/writers/login', { email, password: 'wrong-password' })).status).toBe(401);
    expect((await requestFrom(server, '127.0.0.6', 'POST', '/v1/writers/login', { email: 'folded@example.com', password: 'right-password-1' })).status).toBe(
      429,
    );
  });

  test('one address failing across many emails is throttled (4× the per-name limit), other addresses are not', async () => {
    await newWriter('bystander@example.com');
    for (let i = 0; i < MAX_FAILURES * 4; i++) {
      expect(
        (await requestFrom(server, '127.0.0.7', 'POST', '/v1/writers/login', { email: `spray-${i}@example.com`, password: 'wrong-password' })).status,
      ).toBe(401);
    }
    expect((await requestFrom(server, '127.0.0.7', 'POST', '/v1/writers/login', { email: 'bystander@example.com', password: 'right-password-1' })).status).toBe(
      429,
    );
    expect((await requestFrom(server, '127.0.0.8', 'POST', '/v1/writers/login', { email: 'bystander@example.com', password: 'right-password-1' })).status).toBe(
      200,
    );
  });

  test('successful sign-ins do not use up the address allowance', async () => {
    await newWriter('regular@example.com');
    for (let i = 0; i < MAX_FAILURES * 4 + 5; i++) {
      expect((await requestFrom(server, '127.0.0.9', 'POST', '/v1/writers/login', { email: 'regular@example.com', password: 'right-password-1' })).status).toBe(
        200,
      );
    }
  });
});

describe('/api/auth names are normalised for throttling and for uniqueness', () => {
  test('failures as `CASEY` or `casey ` count against the account `casey` from that address; the owner elsewhere signs in', async () => {
    const created = await call(server, 'POST', '/api/users', { token: admin.token, body: { name: 'casey', password: 'casey-password', isAdmin: false } });
    expect(created.status).toBe(200);
    for (const name of ['CASEY', 'casey ', ' Casey', 'CaSeY', 'casey\t']) {
      expect((await requestFrom(server, '127.0.0.10', 'POST', '/api/auth', { name, password: 'guess-guess' })).status).toBe(401);
    }
    const blocked = await requestFrom(server, '127.0.0.10', 'POST', '/api/auth', { name: 'casey', password: 'casey-password' });
    expect(blocked.status).toBe(429);
    expect(blocked.body).toEqual({ statusCode: 429, message: 'Too Many Requests', error: 'Too Many Requests' });
    expect((await requestFrom(server, '127.0.0.11', 'POST', '/api/auth', { name: 'casey', password: 'casey-password' })).status).toBe(200);
  });

  test.each(['ROOT', 'root ', ' Root'])('a new user named %j next to `root` is a 409', async (name) => {
    const response = await call(server, 'POST', '/api/users', { token: admin.token, body: { name, password: 'long-enough-1', isAdmin: true } });
    expect(response.status).toBe(409);
  });

  test('renaming to another account`s name in other case is a 409; changing the case of one`s own name is not', async () => {
    const dana = await call(server, 'POST', '/api/users', { token: admin.token, body: { name: 'dana', password: 'dana-password', isAdmin: false } });
    expect((await call(server, 'PUT', `/api/users/${dana.body.id}`, { token: admin.token, body: { name: 'CASEY' } })).status).toBe(409);
    const renamed = await call(server, 'PUT', `/api/users/${dana.body.id}`, { token: admin.token, body: { name: 'Dana' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('Dana');
  });
});
