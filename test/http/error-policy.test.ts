import { randomUUID } from 'node:crypto';
import { startServer, type TestServer } from '../support/app.js';
import { graphql, login, SUPERUSER } from '../modules/publishing/support.js';

/**
 * One error policy (issue 12 item 3): an internal failure on every API family — forced by hiding the
 * table it reads, so the store answers "relation does not exist" — is rendered by that family's own
 * renderer, fallbacks included, with a generic message that says nothing of the cause.
 */
let server: TestServer;
let adminToken: string;
let writerToken: string;
const failures: unknown[] = [];

beforeAll(async () => {
  server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
  // Every internal failure reaches the log with its cause.
  server.app.logger.error = ((entry: { err?: unknown }) => void failures.push(entry.err)) as typeof server.app.logger.error;
  const admin = await server.request('POST', '/api/auth', { body: { name: 'admin', password: 'admin-password-1' } });
  adminToken = admin.body.accessToken;
  writerToken = (await login(server, SUPERUSER.email, SUPERUSER.password)).body.accessToken;
});
afterAll(() => server?.close());

/** Runs `action` while `table` is renamed away, then puts it back. */
async function withoutTable<T>(table: string, action: () => Promise<T>): Promise<T> {
  await server.app.db.knex.raw(`ALTER TABLE ${table} RENAME TO ${table}_hidden`);
  try {
    return await action();
  } finally {
    await server.app.db.knex.raw(`ALTER TABLE ${table}_hidden RENAME TO ${table}`);
  }
}

const GENERIC = 'The server failed to answer; quote the request id (x-request-id) to report it.';

/** Nothing of the cause (SQL, table names, driver wording) reaches the client. */
function expectNoCause(text: string): void {
  expect(text).not.toMatch(/relation|_hidden|does not exist|select|sql/i);
}

beforeEach(() => {
  failures.length = 0;
});

test('users API: a fault is 500 {statusCode, message, error} with the generic message, and is logged', async () => {
  const response = await withoutTable('users', () => server.request('GET', '/api/users', { token: adminToken, unchecked: true }));
  expect(response.status).toBe(500);
  expect(response.body).toEqual({ statusCode: 500, message: GENERIC, error: 'Internal Server Error' });
  expectNoCause(response.text);
  expect(failures.length).toBeGreaterThan(0);
});

test('publishing /v1: a fault is 500 problem details with the generic detail', async () => {
  const response = await withoutTable('publishing_articles', () => server.request('GET', '/v1/articles', { unchecked: true }));
  expect(response.status).toBe(500);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  expect(response.body).toEqual({ type: 'about:blank', title: 'Internal Server Error', status: 500, detail: GENERIC });
  expect(response.headers.get('deprecation')).toBe('true');
  expectNoCause(response.text);
  expect(failures.length).toBeGreaterThan(0);
});

test('GraphQL: a fault while resolving is INTERNAL_SERVER_ERROR with the generic message', async () => {
  const response = await withoutTable('publishing_articles', () => graphql(server, writerToken, '{ articles { total } }'));
  expect(response.body.errors).toEqual([expect.objectContaining({ message: GENERIC, extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } })]);
  expectNoCause(JSON.stringify(response.body));
  expect(failures.length).toBeGreaterThan(0);
});

test('GraphQL: a fault before execution (reading the caller) is a 500 in the GraphQL shape, not a 401', async () => {
  const response = await withoutTable('publishing_users', () => graphql(server, writerToken, '{ me { _id } }'));
  expect(response.status).toBe(500);
  expect(response.body).toEqual({ errors: [{ message: GENERIC, extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } }] });
  expect(failures.length).toBeGreaterThan(0);
});

test('webhooks API: a fault is 500 problem details with the generic detail', async () => {
  const response = await withoutTable('webhook_routes', () => server.request('POST', '/routes', { body: {}, unchecked: true }));
  expect(response.status).toBe(500);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  expect(response.body).toEqual({ type: 'about:blank', title: 'Internal Server Error', status: 500, detail: GENERIC });
  expectNoCause(response.text);
});

test("the server's fallback for a fault outside the contract engine (the inspector page) renders the owner's problem details", async () => {
  const response = await withoutTable('webhook_routes', () => fetch(`${server.url}/inspect/${randomUUID()}`, { headers: { accept: 'text/html' } }));
  expect(response.status).toBe(500);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  expect(await response.json()).toEqual({ type: 'about:blank', title: 'Internal Server Error', status: 500, detail: GENERIC });
  expect(failures.length).toBeGreaterThan(0);
});

test('cloud RPCs (Connect JSON): a fault is INTERNAL with the same generic message, and is logged', async () => {
  const response = await withoutTable('compute_instances', () =>
    fetch(`${server.url}/cloud.compute.v1.InstanceService/Get`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: JSON.stringify({ id: 'computeinstance-e0t0000000000000' }),
    }),
  );
  const text = await response.text();
  expect(response.status).toBe(500);
  expect(JSON.parse(text)).toMatchObject({ code: 'internal', message: GENERIC });
  expectNoCause(text);
  expect(failures.length).toBeGreaterThan(0);
});

describe("the server's own routes (express): the server's shape", () => {
  test('an unknown path is 404 {statusCode, message, error}', async () => {
    const response = await server.request('GET', '/no/such/path', { unchecked: true });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ statusCode: 404, message: 'Not Found', error: 'Not Found' });
  });

  test('a fault in a route is 500 with the generic message, and is logged', async () => {
    const tokens = server.app.tokens;
    const jwks = tokens.jwks;
    tokens.jwks = () => {
      throw new Error('key store exploded at /var/lib/secret');
    };
    try {
      const response = await server.request('GET', '/.well-known/jwks.json', { unchecked: true });
      expect(response.status).toBe(500);
      expect(response.body).toEqual({ statusCode: 500, message: GENERIC, error: 'Internal Server Error' });
      expect(response.text).not.toMatch(/exploded|secret/);
      expect(failures).toEqual([expect.objectContaining({ message: 'key store exploded at /var/lib/secret' })]);
    } finally {
      tokens.jwks = jwks;
    }
  });
});
