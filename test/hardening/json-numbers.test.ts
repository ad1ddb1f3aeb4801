import { findUnsafeNumber } from '../../src/engines/json-numbers/index.js';
import { startServer, type TestServer } from '../support/app.js';
import { createActors, SUPERUSER } from '../modules/publishing/support.js';
import { bootstrapAdmin, call, type Account } from '../modules/users/users-fixtures.js';

describe('findUnsafeNumber', () => {
  const cases: Array<[string, { given: string; want: { path: string; message: RegExp } | undefined }]> = [
    ['an ordinary document', { given: '{"a": 1, "b": [1.5, -2e10], "c": "1e999 in a string"}', want: undefined }],
    ['the largest safe integer', { given: '{"n": 9007199254740991, "m": -9007199254740991}', want: undefined }],
    ['a long fraction', { given: '{"n": 0.12345678901234567890}', want: undefined }],
    ['a finite exponent of three digits', { given: '{"n": 1e300, "m": 1e-400}', want: undefined }],
    ['a number past the double range', { given: '{"a": {"b": 1e999}}', want: { path: 'a.b', message: /finite/ } }],
    ['a negative one', { given: '{"x": -1E+400}', want: { path: 'x', message: /finite/ } }],
    ['an integer above 2^53', { given: '{"page": 9007199254740993}', want: { path: 'page', message: /2\^53/ } }],
    ['an integer below -2^53', { given: '[0, {"v": -9007199254740993}]', want: { path: '[1].v', message: /2\^53/ } }],
    ['inside an array of objects', { given: '{"items": [{"n": 1}, {"n": 2}, {"n": 123456789012345678901}]}', want: { path: 'items[2].n', message: /2\^53/ } }],
    ['a key with escapes and digits', { given: '{"a\\"1234567890123456": 1, "b": 1e999}', want: { path: 'b', message: /finite/ } }],
    ['a top-level number', { given: '1e999', want: { path: '', message: /finite/ } }],
    ['a text that is not JSON (checked before its parser) does not throw', { given: '{"a\\x": 1e999', want: { path: 'a\\x', message: /finite/ } }],
    ['an unterminated string', { given: '{"n": "1e999', want: undefined }],
  ];
  test.each(cases)('%s', (_name, { given, want }) => {
    const found = findUnsafeNumber(given);
    if (want === undefined) expect(found).toBeUndefined();
    else expect(found).toMatchObject({ path: want.path, message: expect.stringMatching(want.message) });
  });
});

describe('every API that parses JSON refuses such numbers with 400 naming the field', () => {
  let server: TestServer | undefined;
  let admin: Account;
  let superuserToken: string;
  beforeAll(async () => {
    server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
    admin = await bootstrapAdmin(server);
    superuserToken = (await createActors(server)).tokens.superuser;
  });
  afterAll(() => server?.close());

  test.each([
    ['1e999', /finite/],
    ['9007199254740993', /2\^53/],
  ])('users API: PUT /api/users/{id} with animationDuration %s', async (literal, message) => {
    const response = await call(server!, 'PUT', `/api/users/${admin.id}`, {
      token: admin.token,
      rawBody: `{"settings": {"animationDuration": ${literal}}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ statusCode: 400, details: [{ field: 'settings.animationDuration', message: expect.stringMatching(message) }] });
  });

  test('GraphQL: a body that is not JSON but looks suspicious is still a 400, not a 500', async () => {
    const response = await fetch(`${server!.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${superuserToken}` },
      body: '{"query": "{ __typename }", "variables": {"bad\\x": 12345678901234567',
    });
    expect(response.status).toBe(400);
  });

  test('webhooks API: POST /routes with ttlSeconds 1e999 (problem details)', async () => {
    const response = await server!.request('POST', '/routes', { rawBody: '{"ttlSeconds": 1e999}', headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(JSON.stringify(response.body)).toMatch(/ttlSeconds/);
    expect(JSON.stringify(response.body)).toMatch(/finite/);
  });

  test('GraphQL: a variable holding 1e999', async () => {
    const response = await fetch(`${server!.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${superuserToken}` },
      body: '{"query": "query ($n: Float) { __typename }", "variables": {"n": 1e999}}',
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { errors: Array<{ message: string; extensions: Record<string, unknown> }> };
    expect(body.errors[0]).toMatchObject({
      message: expect.stringMatching(/"n".*finite/),
      extensions: { code: 'BAD_USER_INPUT', status: 400, errors: [{ field: 'n', message: expect.stringMatching(/finite/) }] },
    });
  });

  test('Connect JSON: an int64 page size above 2^53, by POST and by GET', async () => {
    const path = '/cloud.compute.v1.InstanceService/List';
    const message = '{"parentId": "project-1", "pageSize": 9007199254740993}';
    const post = await fetch(`${server!.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: message });
    expect(post.status).toBe(400);
    expect(await post.json()).toMatchObject({ code: 'invalid_argument', message: expect.stringMatching(/pageSize.*2\^53/) });
    const query = new URLSearchParams({ connect: 'v1', encoding: 'json', message });
    const get = await fetch(`${server!.url}${path}?${query}`);
    expect(get.status).toBe(400);
    expect(await get.json()).toMatchObject({ code: 'invalid_argument', message: expect.stringMatching(/pageSize/) });
  });
});
