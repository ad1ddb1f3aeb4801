import { startServer, type TestServer } from '../../support/app.js';
import { login, SUPERUSER } from './support.js';

/**
 * One authentication for the publishing audience (docs/publishing.md, "Tokens"): `/v1` and `/graphql`
 * read the token the same way, shown by the same table of header combinations on both.
 */
let server: TestServer;
let token: string;
let otherToken: string;
let accountToken: string;

beforeAll(async () => {
  server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
  token = (await login(server, SUPERUSER.email, SUPERUSER.password)).body.accessToken;
  const writer = { email: 'ada@example.com', password: 'password-123', name: 'Ada' };
  expect((await server.request('POST', '/v1/writers', { token, body: writer })).status).toBe(201);
  otherToken = (await login(server, writer.email, writer.password)).body.accessToken;
  // A valid token of another audience (the User Account API).
  accountToken = (await server.request('POST', '/api/auth', { body: { name: 'admin', password: 'admin-password-1' } })).body.accessToken;
});
afterAll(() => server?.close());

type Headers = Record<string, string>;
const OK = 200;
const REFUSED = 401;

const CASES: Array<[string, () => Headers, number]> = [
  ['no credentials', () => ({}), REFUSED],
  ['Authorization: Bearer <valid>', () => ({ authorization: `Bearer ${token}` }), OK],
  ['authorization: bearer <valid> (scheme in any case)', () => ({ authorization: `bearer ${token}` }), OK],
  ['x-access-token: <valid>', () => ({ 'x-access-token': token }), OK],
  ['both headers with the same valid token', () => ({ authorization: `Bearer ${token}`, 'x-access-token': token }), OK],
  ['both headers with valid tokens of two users', () => ({ authorization: `Bearer ${token}`, 'x-access-token': otherToken }), REFUSED],
  ['Authorization: Basic … with a valid x-access-token', () => ({ authorization: 'Basic YWRhOnNlY3JldA==', 'x-access-token': token }), REFUSED],
  ['Authorization: Bearer without a token, with a valid x-access-token', () => ({ authorization: 'Bearer', 'x-access-token': token }), REFUSED],
  ['a bad Bearer token with a valid x-access-token', () => ({ authorization: 'Bearer not.a.token', 'x-access-token': token }), REFUSED],
  ['a valid Bearer token with a bad x-access-token', () => ({ authorization: `Bearer ${token}`, 'x-access-token': 'not.a.token' }), REFUSED],
  ['a valid Bearer token with an empty x-access-token', () => ({ authorization: `Bearer ${token}`, 'x-access-token': '' }), REFUSED],
  ['a bad x-access-token alone', () => ({ 'x-access-token': 'not.a.token' }), REFUSED],
  ['a User Account API token (another audience)', () => ({ authorization: `Bearer ${accountToken}` }), REFUSED],
];

describe.each(CASES)('%s', (_name, headersOf, want) => {
  test(`GET /v1/articles?status=draft answers ${want}`, async () => {
    const response = await server.request('GET', '/v1/articles?status=draft', { headers: headersOf() });
    expect(response.status).toBe(want);
    if (want === REFUSED) {
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(response.body).toMatchObject({ status: 401, detail: 'A valid access token is required.' });
    }
  });

  test(`POST /graphql { me } answers ${want}`, async () => {
    const response = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...headersOf() },
      body: JSON.stringify({ query: '{ me { _id } }' }),
    });
    const body = (await response.json()) as { data?: { me: { _id: string } }; errors?: Array<{ extensions: Record<string, unknown> }> };
    expect(response.status).toBe(want);
    if (want === OK) expect(body.data?.me._id).toEqual(expect.any(String));
    else {
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'UNAUTHENTICATED', status: 401 });
    }
  });
});
