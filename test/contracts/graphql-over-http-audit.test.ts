import { auditServer, type AuditResult } from 'graphql-http';
import { startServer, type TestServer } from '../support/app.js';
import { login, SUPERUSER } from '../modules/publishing/support.js';

// The GraphQL-over-HTTP audit of graphql-http (the reference implementation of the spec), run
// against the live /graphql as a signed-in reader would call it: every audit, MUSTs and SHOULDs
// alike, passes (61 of 61 with graphql-http 1.23.1). A third-party checker nobody here wrote
// (issue 19 §4); /graphql needs a bearer token, which the audit's fetch adds to every request.

let server: TestServer | undefined;
let token = '';
beforeAll(async () => {
  server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
  token = (await login(server, SUPERUSER.email, SUPERUSER.password)).body.accessToken as string;
});
afterAll(() => server?.close());

test('every graphql-http server audit passes on /graphql', async () => {
  const fetchFn = (input: string | URL | Request, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const results: AuditResult[] = await auditServer({ url: `${server!.url}/graphql`, fetchFn });
  const failed = results.filter((result) => result.status !== 'ok').map((result) => `${result.status} ${result.id} ${result.name}: ${'reason' in result ? result.reason : ''}`);
  expect(failed).toEqual([]);
  expect(results).toHaveLength(61);
});
