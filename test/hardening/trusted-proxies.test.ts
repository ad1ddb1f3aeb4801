import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { startServer, type TestServer } from '../support/app.js';
import { budget } from '../support/budget.js';

// Issue 27 §1: behind a trusted proxy each client is counted apart, by the address the proxy names;
// nobody else's word is believed. The proxy is a loopback address of its own (127.0.0.2); other
// clients connect from 127.0.0.3 and up, as machines elsewhere would.

const PROXY = '127.0.0.2';
const STRANGER = '127.0.0.3';
const LIMIT = 5;
const FIRST_BYTE_TIMEOUT_MS = 1000;
let server: TestServer;

beforeAll(async () => {
  server = await startServer({
    TRUST_PROXY: `${PROXY}/32`,
    PROXY_PROTOCOL: 'true',
    WEBHOOK_ROUTE_LIMIT: String(LIMIT),
    WEBHOOK_ROUTE_WINDOW_SECONDS: '600',
    FIRST_BYTE_TIMEOUT_MS: String(FIRST_BYTE_TIMEOUT_MS),
  });
});
afterAll(() => server?.close());

interface Answer {
  status: number;
  body: string;
}

/** One request from the loopback address `from`, over its own connection unless an agent is given. */
function send(from: string, method: string, path: string, headers: Record<string, string> = {}, agent?: http.Agent, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port: server.port, method, path, headers, localAddress: from, agent: agent ?? false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

function createRouteFrom(from: string, headers: Record<string, string> = {}, agent?: http.Agent): Promise<Answer> {
  return send(from, 'POST', '/routes', { 'content-type': 'application/json', ...headers }, agent, '{}');
}

/** A route made from an address of its own, so the route-creation limit of the tests' clients is untouched. */
async function freshRoute(): Promise<{ routeId: string; url: string }> {
  const created = await createRouteFrom(PROXY, { 'x-forwarded-for': `192.0.2.${Math.floor(Math.random() * 250) + 1}` });
  expect(created.status).toBe(201);
  return JSON.parse(created.body);
}

/** The address the server recorded for a capture, and the proxy chain beside it, through the inspection API. */
async function capturedAddress(routeId: string, requestId: string): Promise<string> {
  const captured = await server.request('GET', `/inspect/${routeId}/requests/${requestId}`, { headers: { accept: 'application/json' } });
  expect(captured.status).toBe(200);
  return captured.body.proxyChain ? `${captured.body.remoteAddress} via ${captured.body.proxyChain.join(' ')}` : captured.body.remoteAddress;
}

const SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

/** A PROXY header naming `source` (IPv4) as the client: text (v1) or binary (v2, with a TLV to skip). */
function proxyHeader(version: 1 | 2, source: string, port = server.port): Buffer {
  if (version === 1) return Buffer.from(`PROXY TCP4 ${source} 127.0.0.1 40000 ${port}\r\n`, 'latin1');
  const addresses = Buffer.from([...source.split('.').map(Number), 127, 0, 0, 1, 0x9c, 0x40, 0, 0]);
  addresses.writeUInt16BE(port, 10);
  const tlv = Buffer.from([0x04, 0x00, 0x02, 0x68, 0x69]); // PP2_TYPE_NOOP, two bytes
  const length = Buffer.alloc(2);
  length.writeUInt16BE(addresses.length + tlv.length);
  return Buffer.concat([SIGNATURE, Buffer.from([0x21, 0x11]), length, addresses, tlv]);
}

/** A raw connection from `from`; resolves once connected. */
async function rawSocket(from: string): Promise<net.Socket> {
  const socket = net.connect({ host: '127.0.0.1', port: server.port, localAddress: from });
  await once(socket, 'connect');
  return socket;
}

/** Everything a socket receives until the server closes it. */
function readToEnd(socket: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', () => undefined);
    socket.once('close', () => resolve(text));
  });
}

describe('X-Forwarded-For from a trusted proxy', () => {
  test(
    'one client rotating 1,000 different leftmost values stays in one bucket: 429 at the same count as a client that sends none',
    async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
      try {
        const statuses: number[] = [];
        for (let batch = 0; batch < 1000; batch += 8) {
          const answers = await Promise.all(
            Array.from({ length: Math.min(8, 1000 - batch) }, (_, offset) => {
              const n = batch + offset;
              return createRouteFrom(PROXY, { 'x-forwarded-for': `10.${n >> 8}.${n & 255}.1, 198.51.100.7` }, agent);
            }),
          );
          statuses.push(...answers.map((answer) => answer.status));
        }
        expect(statuses.filter((status) => status === 201)).toHaveLength(LIMIT);
        expect(statuses.filter((status) => status === 429)).toHaveLength(1000 - LIMIT);
      } finally {
        agent.destroy();
      }
      // A client sending nothing but the proxy's own header is refused at the same count.
      const single: number[] = [];
      for (let n = 0; n <= LIMIT; n++) single.push((await createRouteFrom(PROXY, { 'x-forwarded-for': '198.51.100.8' })).status);
      expect(single).toEqual([...Array.from({ length: LIMIT }, () => 201), 429]);
    },
    budget(60_000),
  );

  test('two clients behind the one proxy get two buckets', async () => {
    for (let n = 0; n < LIMIT; n++) expect((await createRouteFrom(PROXY, { 'x-forwarded-for': '198.51.100.21' })).status).toBe(201);
    expect((await createRouteFrom(PROXY, { 'x-forwarded-for': '198.51.100.21' })).status).toBe(429);
    expect((await createRouteFrom(PROXY, { 'x-forwarded-for': '198.51.100.22' })).status).toBe(201);
    // The proxy's own bucket (a request with no header) is a third.
    expect((await createRouteFrom(PROXY)).status).toBe(201);
  });

  test('Forwarded for= is walked like X-Forwarded-For, and a capture records the client with the proxy beside it', async () => {
    const { routeId } = await freshRoute();
    const captured = await send(PROXY, 'POST', `/${routeId}`, { forwarded: 'for=6.6.6.6, for="[2001:db8::7]:4711";proto=https' }, undefined, 'hi');
    expect(captured.status).toBe(200);
    expect(await capturedAddress(routeId, JSON.parse(captured.body).requestId)).toBe(`2001:db8::7 via ${PROXY}`);
  });

  test("from a peer that is not trusted, X-Forwarded-For is ignored: its rotating values share the peer's bucket", async () => {
    const statuses: number[] = [];
    for (let n = 0; n <= LIMIT; n++) statuses.push((await createRouteFrom(STRANGER, { 'x-forwarded-for': `203.0.113.${n + 1}` })).status);
    expect(statuses).toEqual([...Array.from({ length: LIMIT }, () => 201), 429]);
    const { routeId } = await freshRoute();
    const captured = await send(STRANGER, 'POST', `/${routeId}`, { 'x-forwarded-for': '203.0.113.99' }, undefined, 'hi');
    expect(await capturedAddress(routeId, JSON.parse(captured.body).requestId)).toBe(STRANGER);
  });

  test('X-Forwarded-Proto and X-Forwarded-Host name the origin only when a trusted proxy sends them', async () => {
    const headers = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'hooks.example.test', 'x-forwarded-for': '198.51.100.31' };
    const trusted = await createRouteFrom(PROXY, headers);
    expect(JSON.parse(trusted.body).url).toMatch(/^https:\/\/hooks\.example\.test\//);
    const stranger = await createRouteFrom('127.0.0.5', headers);
    expect(JSON.parse(stranger.body).url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${server.port}/`));
  });
});

const VERSIONS = [
  ['v1', 1],
  ['v2', 2],
] as const;

describe('PROXY protocol', () => {
  test.each(VERSIONS)('a %s header from a trusted peer names the client of an HTTP/1.1 request', async (_name, version) => {
    const { routeId } = await freshRoute();
    const socket = await rawSocket(PROXY);
    const answer = readToEnd(socket);
    socket.write(
      Buffer.concat([
        proxyHeader(version, '198.51.100.40'),
        Buffer.from(`POST /${routeId} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`),
      ]),
    );
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    const requestId = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).requestId;
    expect(await capturedAddress(routeId, requestId)).toBe(`198.51.100.40 via ${PROXY}`);
  });

  test.each(VERSIONS)('a %s header from a trusted peer names the client of an h2c session: gRPC and captures on it', async (_name, version) => {
    const { routeId } = await freshRoute();
    const socket = await rawSocket(PROXY);
    socket.write(proxyHeader(version, '198.51.100.50'));
    const session = http2.connect(`http://127.0.0.1:${server.port}`, { createConnection: () => socket });
    try {
      const grpc = session.request({ ':method': 'POST', ':path': '/grpc.health.v1.Health/Check', 'content-type': 'application/grpc', te: 'trailers' });
      const trailers = once(grpc, 'trailers');
      grpc.resume();
      grpc.end(Buffer.alloc(5));
      expect((await trailers)[0]['grpc-status']).toBe('0');

      const capture = session.request({ ':method': 'POST', ':path': `/${routeId}` });
      let text = '';
      capture.setEncoding('utf8');
      capture.on('data', (chunk: string) => (text += chunk));
      capture.end('hi');
      await once(capture, 'end');
      expect(await capturedAddress(routeId, JSON.parse(text).requestId)).toBe(`198.51.100.50 via ${PROXY}`);
    } finally {
      session.destroy();
    }
  });

  test('a PROXY header from a peer that is not trusted closes its connection unanswered', async () => {
    const socket = await rawSocket(STRANGER);
    const answer = readToEnd(socket);
    socket.write(Buffer.concat([proxyHeader(1, '198.51.100.60'), Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')]));
    expect(await answer).toBe('');
  });

  test('a malformed PROXY header closes only its own connection', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await send(PROXY, 'GET', '/healthz', {}, agent)).status).toBe(200);
      for (const garbage of [
        'PROXY TCP4 not-an-address 127.0.0.1 1 2\r\n',
        `PROXY ${'x'.repeat(200)}`,
        Buffer.concat([SIGNATURE, Buffer.from([0x21, 0x11, 0, 4, 1, 2, 3, 4])]),
      ]) {
        const socket = await rawSocket(PROXY);
        const answer = readToEnd(socket);
        socket.write(garbage);
        expect(await answer).toBe('');
      }
      // The kept-alive connection opened before is still served, and so are new ones.
      expect((await send(PROXY, 'GET', '/healthz', {}, agent)).status).toBe(200);
      expect((await send(STRANGER, 'GET', '/healthz')).status).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  test('a sender that never finishes its header is closed after FIRST_BYTE_TIMEOUT_MS', async () => {
    const socket = await rawSocket(PROXY);
    const answer = readToEnd(socket);
    const started = performance.now();
    socket.write('PROXY TCP4 198.51.100.');
    expect(await answer).toBe('');
    expect(performance.now() - started).toBeGreaterThanOrEqual(FIRST_BYTE_TIMEOUT_MS - 50);
  });

  test('a trusted peer without a PROXY header is served as itself (health checks)', async () => {
    expect((await send(PROXY, 'GET', '/healthz')).status).toBe(200);
  });
});

describe('PROXY protocol before TLS', () => {
  let secure: TestServer;
  let dir: string;
  let ca: Buffer;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'proxy-tls-'));
    const subject = ['-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'];
    const files = ['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', ...subject, ...files], {
      stdio: 'ignore',
    });
    ca = readFileSync(join(dir, 'cert.pem'));
    secure = await startServer({ TLS_CERT: join(dir, 'cert.pem'), TLS_KEY: join(dir, 'key.pem'), TRUST_PROXY: 'loopback', PROXY_PROTOCOL: 'true' });
  });
  afterAll(async () => {
    await secure?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a v2 header, then the TLS handshake and HTTP/1.1: the capture records the PROXY source', async () => {
    const routeId = await new Promise<string>((resolve, reject) => {
      const request = https.request(
        { host: '127.0.0.1', port: secure.port, method: 'POST', path: '/routes', ca, servername: 'localhost', headers: { 'content-type': 'application/json' } },
        (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          response.on('end', () => resolve(JSON.parse(text).routeId));
        },
      );
      request.on('error', reject);
      request.end('{}');
    });
    const raw = net.connect({ host: '127.0.0.1', port: secure.port });
    await once(raw, 'connect');
    const header = proxyHeader(2, '198.51.100.70', secure.port);
    raw.write(header);
    const socket = tls.connect({ socket: raw, ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
    await once(socket, 'secureConnect');
    const answer = readToEnd(socket as unknown as net.Socket);
    socket.write(`POST /${routeId} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`);
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    const requestId = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).requestId;
    const row = await secure.app.db.knex('webhook_requests').where({ id: requestId }).first('remote_address', 'proxy_chain');
    expect(row).toEqual({ remote_address: '198.51.100.70', proxy_chain: '127.0.0.1' });
  });
});
