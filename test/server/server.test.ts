import http from 'node:http';
import http2 from 'node:http2';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { ServerInfoService } from '../../generated/proto/cloud/common/v1/server_info_service_pb.js';
import { h2Request, startServer, type TestServer } from '../support/app.js';
import { budget } from '../support/budget.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.close());

test('healthz says the process is up and readyz that the database answers', async () => {
  const health = await server.request('GET', '/healthz', { unchecked: true });
  expect(health.body).toEqual({ status: 'ok' });
  const ready = await server.request('GET', '/readyz', { unchecked: true });
  expect(ready.status).toBe(200);
  expect(ready.body).toMatchObject({ status: 'ready', database: 'ok' });
});

test('every response carries an x-request-id, and a safe incoming one is echoed', async () => {
  for (const path of ['/api', '/healthz', '/nowhere']) {
    const response = await server.request('GET', path, { unchecked: true });
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  }
  const echoed = await server.request('GET', '/api', { headers: { 'x-request-id': 'client-chosen-42' } });
  expect(echoed.headers.get('x-request-id')).toBe('client-chosen-42');
  const unsafe = await server.request('GET', '/api', { headers: { 'x-request-id': 'bad id with spaces' } });
  expect(unsafe.headers.get('x-request-id')).not.toBe('bad id with spaces');
});

test('over HTTP/1.1 every kind of writer sends the x-request-id and traceparent once, with the head it writes', async () => {
  // The REST engine's reply, its HEAD, the table's 404, the metrics page and connect-node (which writes its own head).
  const requests: Array<[string, string, Record<string, string>, string?]> = [
    ['GET', '/api', {}],
    ['HEAD', '/api', {}],
    ['GET', '/nowhere', {}],
    ['GET', '/metrics', {}],
    ['POST', '/cloud.common.v1.ServerInfoService/GetServerInfo', { 'content-type': 'application/json' }, '{}'],
  ];
  for (const [method, path, headers, body] of requests) {
    const { status, rawHeaders } = await new Promise<{ status: number; rawHeaders: string[] }>((resolve, reject) => {
      const request = http.request(`${server.url}${path}`, { method, headers: { 'x-request-id': `echo-${method}`, ...headers } }, (response) => {
        response.resume();
        response.on('end', () => resolve({ status: response.statusCode ?? 0, rawHeaders: response.rawHeaders }));
      });
      request.on('error', reject);
      request.end(body);
    });
    const values = (name: string) => rawHeaders.filter((_, index) => index % 2 === 1 && rawHeaders[index - 1]!.toLowerCase() === name);
    expect([path, status > 0, values('x-request-id')]).toEqual([path, true, [`echo-${method}`]]);
    expect(values('traceparent')).toEqual([expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/)]);
  }
});

test('unknown routes outside every API answer the default JSON error shape', async () => {
  const response = await server.request('GET', '/no/such/route', { unchecked: true });
  expect(response.status).toBe(404);
  expect(response.body).toEqual({ statusCode: 404, message: 'Not Found', error: 'Not Found' });
});

test('REST is served over cleartext HTTP/2 (prior knowledge) on the same port', async () => {
  const session = http2.connect(server.url);
  try {
    const result = await new Promise<{ status: number; body: string; requestId: string }>((resolve, reject) => {
      const stream = session.request({ ':path': '/api', ':method': 'GET' });
      let status = 0;
      let requestId = '';
      let body = '';
      stream.on('response', (headers) => {
        status = Number(headers[':status']);
        requestId = String(headers['x-request-id']);
      });
      stream.on('data', (chunk: Buffer) => (body += chunk.toString()));
      stream.on('end', () => resolve({ status, body, requestId }));
      stream.on('error', reject);
    });
    expect(result.status).toBe(200);
    expect(JSON.parse(result.body)).toEqual({ name: 'contract-first-server', version: '1.0.0' });
    expect(result.requestId).toMatch(/^[0-9a-f-]{36}$/);
  } finally {
    session.close();
  }
});

test('health, readiness, the key set and the JSON 404 answer over cleartext HTTP/2 too', async () => {
  const health = await h2Request(server.url, '/healthz');
  expect([health.status, JSON.parse(health.body)]).toEqual([200, { status: 'ok' }]);
  const ready = await h2Request(server.url, '/readyz');
  expect(ready.status).toBe(200);
  expect(JSON.parse(ready.body)).toMatchObject({ status: 'ready', database: 'ok' });
  const jwks = await h2Request(server.url, '/.well-known/jwks.json');
  expect(jwks.status).toBe(200);
  expect(JSON.parse(jwks.body).keys.length).toBeGreaterThan(0);
  expect(jwks.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  const missing = await h2Request(server.url, '/no/such/route');
  expect([missing.status, JSON.parse(missing.body)]).toEqual([404, { statusCode: 404, message: 'Not Found', error: 'Not Found' }]);
});

test.each([
  ['Connect over HTTP/1.1', () => createConnectTransport({ baseUrl: server.url, httpVersion: '1.1' })],
  ['Connect over HTTP/2', () => createConnectTransport({ baseUrl: server.url, httpVersion: '2' })],
  ['gRPC-Web over HTTP/1.1', () => createGrpcWebTransport({ baseUrl: server.url, httpVersion: '1.1' })],
])('RPC services answer %s on the same port', async (_name, transport) => {
  const client = createClient(ServerInfoService, transport());
  await expect(client.getServerInfo({})).resolves.toMatchObject({ name: 'contract-first-server', version: '1.0.0' });
});

test(
  'graceful shutdown lets an in-flight request finish and then refuses new connections',
  async () => {
    const own = await startServer();
    const body = JSON.stringify({ name: 'first-admin', password: 'first-admin-password' });
    const request = http.request(`${own.url}/api/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), expect: '100-continue' },
    });
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      request.on('response', (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      request.on('error', reject);
    });
    // "100 Continue" proves the server is handling the request before shutdown begins.
    await new Promise((resolve) => request.once('continue', resolve));
    const closing = own.close();
    request.end(body);
    expect((await response).status).toBe(200);
    await closing;
    await expect(fetch(`${own.url}/api`)).rejects.toThrow();
  },
  budget(20_000),
);

describe('HEAD', () => {
  /** GET and HEAD of one path: the same status and headers, and HEAD without a body. */
  async function compare(path: string, headers: Record<string, string> = {}) {
    const get = await fetch(`${server.url}${path}`, { headers });
    const getBody = await get.text();
    const head = await fetch(`${server.url}${path}`, { method: 'HEAD', headers });
    expect(await head.text()).toBe('');
    const length = head.headers.get('content-length');
    return { get: get.status, head: head.status, getBody, length, type: head.headers.get('content-type'), getType: get.headers.get('content-type') };
  }

  test.each([
    '/healthz',
    '/readyz',
    '/.well-known/jwks.json',
    '/openapi',
    '/openapi/users.yaml',
    '/docs',
    '/graphql/schema.graphql',
    '/api',
    '/v1/articles',
    '/v1/topics',
  ])('HEAD %s answers as GET does, without the body', async (path) => {
    const result = await compare(path);
    expect(result.head).toBe(result.get);
    expect(result.head).toBe(200);
    expect(result.type).toBe(result.getType);
    expect(result.length).toBe(String(Buffer.byteLength(result.getBody)));
  });

  test('HEAD runs the GET operation with its security: 401 without a token, 200 with one', async () => {
    expect((await compare('/api/users')).head).toBe(401);
    const admin = await server.request('POST', '/api/auth', { body: { name: 'head-admin', password: 'head-admin-password' } });
    const token = String(admin.body.accessToken);
    const result = await compare('/api/users', { authorization: `Bearer ${token}` });
    expect([result.get, result.head]).toEqual([200, 200]);
    expect(result.length).toBe(String(Buffer.byteLength(result.getBody)));
    const user = await compare(`/api/users/${String(admin.body.user.id)}`, { authorization: `Bearer ${token}` });
    expect(user.head).toBe(user.get);
  });

  test('every GET operation of every REST contract answers HEAD with the status of its GET', async () => {
    const route = await server.request('POST', '/routes', { body: {} });
    const ids: Record<string, string> = { routeId: String(route.body.routeId), requestId: '3d0c5d0e-8f43-4b7e-a4cc-1f0e2d6b9a11', id: '1', subPath: 'github' };
    const skip = new Set(['openNewInspector', 'streamCapturedRequests']);
    let checked = 0;
    for (const rest of Object.values(server.app.restApis)) {
      for (const operation of rest.api.router.getOperations()) {
        if (operation.method !== 'get' || skip.has(operation.operationId ?? '')) continue;
        const path = operation.path.replace(/\{(\w+)\}/g, (_match, name: string) => ids[name] ?? 'x');
        const result = await compare(path);
        expect([operation.operationId, result.head]).toEqual([operation.operationId, result.get]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });

  test('HEAD of the live event stream sends its headers and ends; HEAD /inspect creates no route', async () => {
    const route = await server.request('POST', '/routes', { body: {} });
    const stream = await fetch(`${server.url}/inspect/${String(route.body.routeId)}/stream`, { method: 'HEAD' });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(await stream.text()).toBe('');
    const head = await fetch(`${server.url}/inspect`, { method: 'HEAD', redirect: 'manual' });
    expect(head.status).toBe(404);
    expect(head.headers.get('location')).toBeNull();
  });

  test('HEAD answers over HTTP/2 as well', async () => {
    const get = await h2Request(server.url, '/api');
    const head = await h2Request(server.url, '/api', 'HEAD');
    expect([head.status, head.body, head.headers['content-length']]).toEqual([200, '', String(Buffer.byteLength(get.body))]);
  });
});
