/**
 * Regressions found by the contract fuzzer (scripts/fuzz-contract.ts): each answer below used to
 * be a 5xx or a status/content type the contract does not document.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { AppError, toAppError } from '../../src/errors.js';
import { withoutUnknownParameters } from '../../src/http/rest-engine/validator.js';
import { startServer, type TestServer } from '../support/app.js';
import { GrpcTestClient, expectGrpcError } from '../support/grpc.js';
import { bootstrapAdmin, type Account } from '../modules/users/users-fixtures.js';
import { SUPERUSER, login } from '../modules/publishing/support.js';

let server: TestServer;
let admin: Account;
let publishingToken: string;

beforeAll(async () => {
  server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
  admin = await bootstrapAdmin(server);
  publishingToken = (await login(server, SUPERUSER.email, SUPERUSER.password)).body.accessToken as string;
});
afterAll(() => server?.close());

describe('query parameters an operation does not declare', () => {
  test.each([
    ['a cache buster', '_=1700000000', ['']],
    ['an unknown and a declared parameter', 'utm_source=x&limit=5', ['limit=5']],
    ['an undecodable name', '%E0%A4%A=1&limit=5', ['limit=5']],
    ['a parameter given twice', 'tag=a&tag=b&x=1', ['tag=a&tag=b']],
  ])('%s: only the declared ones are kept', (_name, query, [want]) => {
    expect(withoutUnknownParameters(query, new Set(['limit', 'tag']))).toBe(want);
  });

  test('are ignored, not rejected, by an operation without query parameters', async () => {
    const response = await server.request('GET', '/api?_=1700000000');
    expect(response.status).toBe(200);
  });

  test('are ignored next to declared ones, which are still validated', async () => {
    expect((await server.request('GET', '/v1/articles?limit=5&utm_source=mail')).status).toBe(200);
    expect((await server.request('GET', '/v1/articles?limit=1000&utm_source=mail')).status).toBe(400);
  });
});

test('a body sent to an operation that takes none is ignored (DELETE with a text body)', async () => {
  const response = await server.request('DELETE', '/api/users/no-such-user', { token: admin.token, rawBody: 'hello', headers: { 'content-type': 'text/plain' } });
  expect(response.status).toBe(404);
});

describe('a path parameter outside its schema on an operation that documents 404 but no 400', () => {
  test.each([
    ['DELETE', `/v1/articles/${'a'.repeat(65)}`],
    ['POST', `/v1/articles/${'a'.repeat(65)}/publish`],
    ['GET', `/v1/writers/${'a'.repeat(65)}`],
  ])('%s %s is 404', async (method, path) => {
    const response = await server.request(method, path, { token: publishingToken });
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  test('a malformed route id on the event stream is 404', async () => {
    const response = await server.request('GET', '/inspect/not-a-uuid/stream');
    expect(response.status).toBe(404);
  });

  test('is still 400 where the operation documents 400', async () => {
    const response = await server.request('PUT', `/v1/articles/${'a'.repeat(65)}`, { token: publishingToken, body: { title: 't', text: 'x' } });
    expect(response.status).toBe(400);
  });
});

describe('NUL characters, which PostgreSQL cannot store', () => {
  test.each([
    ['POST', '/v1/topics', { title: 'a\u0000b' }, 'title'],
    ['POST', '/v1/writers', { email: 'nul@example.com', password: 'password-1\u0000', name: 'x\u0000' }, 'password'],
    ['POST', '/v1/articles', { title: '\u0000', text: 'x' }, 'title'],
  ])('%s %s with a NUL in the body is a 400 naming the field', async (method, path, body, field) => {
    const response = await server.request(method, path, { token: publishingToken, body });
    expect(response.status).toBe(400);
    expect(response.body.errors).toEqual([{ field, message: 'must not contain NUL characters' }]);
  });

  test('a NUL in a users body is a 400 naming the field', async () => {
    const response = await server.request('POST', '/api/users', { token: admin.token, body: { name: 'nul\u0000name', password: 'password-1', isAdmin: false } });
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([{ field: 'name', message: 'must not contain NUL characters' }]);
  });

  test('a NUL in a path id is a 404 where no 400 is documented', async () => {
    expect((await server.request('GET', '/v1/articles/%00', { token: publishingToken })).status).toBe(404);
    expect((await server.request('GET', '/api/users/%00', { token: admin.token })).status).toBe(404);
  });

  test('a NUL in a query value is a 400', async () => {
    expect((await server.request('GET', '/v1/articles?q=%00', { token: publishingToken })).status).toBe(400);
  });

  test('a NUL reaching the store over gRPC is INVALID_ARGUMENT, not INTERNAL', async () => {
    const grpc = new GrpcTestClient(server.url);
    try {
      const error = await expectGrpcError(grpc.call(InstanceService.method.getByName, { parentId: 'project-nul', name: 'a\u0000b' }, { token: admin.token }));
      expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
      expect(error.serviceError?.details.case).toBe('badRequest');
      expect(error.details).toMatch(/NUL/);
    } finally {
      grpc.close();
    }
  });

  test.each([
    ['22021', 'invalid_argument'],
    ['22P05', 'invalid_argument'],
    ['23505', 'internal'],
  ])('a database error with SQLSTATE %s becomes %s', (code, want) => {
    const error = Object.assign(new Error('db said no'), { code });
    const mapped = toAppError(error);
    expect(mapped).toBeInstanceOf(AppError);
    expect(mapped.code).toBe(want);
  });
});

test('an unknown route asked for as HTML is a 404 page the contract documents', async () => {
  const response = await server.request('GET', '/inspect/0b6f4a57-3f55-4d1e-9e8a-3c2f5b1d7a90', { headers: { accept: 'text/html' } });
  expect(response.status).toBe(404);
  expect(response.headers.get('content-type')).toMatch(/^text\/html/);
});
