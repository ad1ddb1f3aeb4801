import http from 'node:http';
import http2 from 'node:http2';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { ServerInfoService } from '../../generated/proto/cloud/common/v1/server_info_service_pb.js';
import { startServer, type TestServer } from '../support/app.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

test('healthz says the process is up and readyz that the database answers', async () => {
  const health = await server.request('GET', '/healthz', { unchecked: true });
  expect(health.body).toEqual({ status: 'ok' });
  const ready = await server.request('GET', '/readyz', { unchecked: true });
  expect(ready.status).toBe(200);
  expect(ready.body).toEqual({ status: 'ready', database: 'ok' });
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
    expect(JSON.parse(result.body)).toEqual({ name: 'user-account-service', version: '1.0.0' });
    expect(result.requestId).toMatch(/^[0-9a-f-]{36}$/);
  } finally {
    session.close();
  }
});

test.each([
  ['Connect over HTTP/1.1', () => createConnectTransport({ baseUrl: server.url, httpVersion: '1.1' })],
  ['Connect over HTTP/2', () => createConnectTransport({ baseUrl: server.url, httpVersion: '2' })],
  ['gRPC-Web over HTTP/1.1', () => createGrpcWebTransport({ baseUrl: server.url, httpVersion: '1.1' })],
])('RPC services answer %s on the same port', async (_name, transport) => {
  const client = createClient(ServerInfoService, transport());
  await expect(client.getServerInfo({})).resolves.toMatchObject({ name: 'user-account-service', version: '1.0.0' });
});

test('graceful shutdown lets an in-flight request finish and then refuses new connections', async () => {
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
});
