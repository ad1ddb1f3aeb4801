import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import https from 'node:https';
import net from 'node:net';
import { once } from 'node:events';
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { fromBinary, toBinary, create } from '@bufbuild/protobuf';
import {
  GetServerInfoRequestSchema,
  GetServerInfoResponseSchema,
  type GetServerInfoResponse,
} from '../../generated/proto/cloud/common/v1/server_info_service_pb.js';
import { h2Request, startServer, type TestServer } from '../support/app.js';

let server: TestServer;
let dir: string;
let ca: Buffer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  ca = readFileSync(join(dir, 'cert.pem'));
  server = await startServer({ TLS_CERT: join(dir, 'cert.pem'), TLS_KEY: join(dir, 'key.pem'), FIRST_BYTE_TIMEOUT_MS: '300' });
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('with TLS_CERT and TLS_KEY, an HTTP/1.1-only client is served REST over HTTPS', async () => {
  const { status, body, alpn } = await new Promise<{ status: number; body: string; alpn: string }>((resolve, reject) => {
    const options: https.RequestOptions & { ALPNProtocols: string[] } = {
      host: '127.0.0.1',
      port: server.port,
      path: '/api',
      ca,
      servername: 'localhost',
      ALPNProtocols: ['http/1.1'],
    };
    const req = https.get(options, (res) => {
      let text = '';
      const alpn = String((res.socket as { alpnProtocol?: string | false }).alpnProtocol);
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, alpn }));
    });
    req.on('error', reject);
  });
  expect(status).toBe(200);
  expect(alpn).toBe('http/1.1');
  expect(JSON.parse(body)).toEqual({ name: 'contract-first-server', version: '1.0.0' });
});

test('with TLS, REST answers over HTTP/2 negotiated by ALPN', async () => {
  const session = http2.connect(`https://localhost:${server.port}`, { ca });
  try {
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const stream = session.request({ ':path': '/api', ':method': 'GET' });
      let status = 0;
      let text = '';
      stream.on('response', (headers) => (status = Number(headers[':status'])));
      stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
      stream.on('end', () => resolve({ status, body: text }));
      stream.on('error', reject);
    });
    expect(status).toBe(200);
    expect(JSON.parse(body)).toMatchObject({ version: '1.0.0' });
  } finally {
    session.close();
  }
});

test('with TLS, a grpc-js client calls a service over h2', async () => {
  const client = new grpc.Client(`localhost:${server.port}`, grpc.credentials.createSsl(ca));
  try {
    const response = await new Promise<GetServerInfoResponse>((resolve, reject) => {
      client.makeUnaryRequest(
        '/cloud.common.v1.ServerInfoService/GetServerInfo',
        (message: ReturnType<typeof create<typeof GetServerInfoRequestSchema>>) => Buffer.from(toBinary(GetServerInfoRequestSchema, message)),
        (bytes: Buffer) => fromBinary(GetServerInfoResponseSchema, bytes),
        create(GetServerInfoRequestSchema),
        (error, value) => (error || !value ? reject(error) : resolve(value)),
      );
    });
    expect(response.version).toBe('1.0.0');
  } finally {
    client.close();
  }
});

test('with TLS, health, readiness and the key set answer over HTTP/2 negotiated by ALPN, and HEAD too', async () => {
  const url = `https://localhost:${server.port}`;
  const health = await h2Request(url, '/healthz', 'GET', { ca });
  expect([health.status, JSON.parse(health.body)]).toEqual([200, { status: 'ok' }]);
  const ready = await h2Request(url, '/readyz', 'GET', { ca });
  expect(ready.status).toBe(200);
  expect(JSON.parse(ready.body)).toMatchObject({ status: 'ready', database: 'ok' });
  const jwks = await h2Request(url, '/.well-known/jwks.json', 'GET', { ca });
  expect(jwks.status).toBe(200);
  expect(JSON.parse(jwks.body).keys.length).toBeGreaterThan(0);
  const head = await h2Request(url, '/.well-known/jwks.json', 'HEAD', { ca });
  expect([head.status, head.body, head.headers['content-length']]).toEqual([200, '', String(Buffer.byteLength(jwks.body))]);
});

test('with TLS, a connection that never starts its handshake is closed after FIRST_BYTE_TIMEOUT_MS', async () => {
  const socket = net.connect(server.port, '127.0.0.1');
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  const started = performance.now();
  const timer = setTimeout(() => socket.destroy(new Error('still open')), 3000);
  await once(socket, 'close');
  clearTimeout(timer);
  const elapsed = performance.now() - started;
  expect(elapsed).toBeGreaterThanOrEqual(250);
  expect(elapsed).toBeLessThan(2900);
});
