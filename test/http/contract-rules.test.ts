import { contractCheck, contractParameterCheck } from '../../src/http/contract-rules.js';
import { startServer, type TestServer } from '../support/app.js';

// A service reached without the REST engine's validation (GraphQL, the inspector page, start-up
// settings) checks its input with the contract's own schema: the same bounds, the same words.

let server: TestServer | undefined;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.close());

const createRoute = contractCheck('webhooks', 'CreateRouteRequest');

describe('a contract check answers what the REST engine answers', () => {
  test.each([
    ['a lifetime above 30 days', { ttlSeconds: 31 * 24 * 3600 }],
    ['a lifetime of 0', { ttlSeconds: 0 }],
    ['a status below 200 and a delay above 30 s', { response: { status: 101, delayMs: 30_001 } }],
    ['an unknown scheme, an empty secret, a tolerance of 0', { verify: { scheme: 'md5', secret: '', toleranceSeconds: 0 } }],
    ['a header name with a space', { verify: { scheme: 'hmac-sha256', secret: 's', header: 'bad name' } }],
    ['an unknown property', { colour: 'red' }],
  ])('%s', async (_name, body) => {
    const refused = await server!.request('POST', '/routes', { body });
    expect(refused.status).toBe(400);
    const violations = createRoute(body);
    expect(violations.length).toBeGreaterThan(0);
    expect(violations).toEqual(refused.body.errors);
  });

  test('a value inside the contract has no violations', () => {
    expect(createRoute({ ttlSeconds: 3600, response: { status: 202, delayMs: 0 }, verify: { scheme: 'github', secret: 's', toleranceSeconds: 300 } })).toEqual(
      [],
    );
  });
});

describe('fragments', () => {
  test('a property check names its violations after the property and counts characters as JSON Schema does (code points)', () => {
    const password = contractCheck('users', 'CreateUserDto/properties/password');
    expect(password('😀'.repeat(7))).toEqual([{ field: 'password', message: 'must NOT have fewer than 8 characters' }]);
    expect(password('😀'.repeat(8))).toEqual([]);
    const name = contractCheck('users', 'CreateUserDto/properties/name');
    expect(name('\u00a0\u3000')).toEqual([{ field: 'name', message: 'must match pattern "\\S"' }]);
  });

  test('a parameter check takes the named query parameters of an operation, skipping absent and null ones', () => {
    const filters = contractParameterCheck('publishing', 'listArticles', ['q', 'tag', 'topic']);
    expect(filters({ q: null, tag: undefined, topic: 'x', status: 'draft' })).toEqual([]);
    // In the contract's order of the parameters (tag before q), as REST reports them.
    expect(filters({ q: '', tag: 't'.repeat(51) })).toEqual([
      { field: 'tag', message: 'must NOT have more than 50 characters' },
      { field: 'q', message: 'must NOT have fewer than 1 characters' },
    ]);
  });

  test('a parameter the operation does not have is a programming error, refused on first use', () => {
    expect(() => contractParameterCheck('publishing', 'listArticles', ['nope'])({})).toThrow('listArticles has no parameter nope');
    expect(() => contractParameterCheck('publishing', 'noSuchOperation', ['q'])({})).toThrow('no operation noSuchOperation');
  });
});
