import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { once } from 'node:events';
import { startServer, type TestServer } from '../support/app.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { budget } from '../support/budget.js';

/** Short timeouts so each case takes well under a second; the defaults are in src/settings/table.ts. */
const TIMEOUTS = {
  FIRST_BYTE_TIMEOUT_MS: '300',
  HEADERS_TIMEOUT_MS: '400',
  KEEP_ALIVE_TIMEOUT_MS: '300',
  HTTP2_IDLE_TIMEOUT_MS: '300',
  SHUTDOWN_GRACE_MS: '500',
};
/** How much later than its timeout a connection may close (timer checks, a loaded machine). Tests that start their own server allow 60 s: starting one takes seconds when the machine is busy. */
const SLACK_MS = 2500;

let server: TestServer;
beforeAll(async () => {
  server = await startServer(TIMEOUTS);
});
afterAll(() => server?.close());

/** A raw TCP connection; `closed` resolves with the ms from connect to close and what the server sent. */
async function rawConnection(port: number): Promise<{ socket: net.Socket; closed: Promise<{ ms: number; received: string }> }> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  const started = performance.now();
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  const closed = once(socket, 'close').then(() => ({ ms: performance.now() - started, received }));
  return { socket, closed };
}

/** Fails with a clear message instead of jest's timeout when `promise` takes longer than `ms`. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still open after ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

test('connections that never send a byte are closed after FIRST_BYTE_TIMEOUT_MS', async () => {
  const connections = await Promise.all(Array.from({ length: 50 }, () => rawConnection(server.port)));
  const results = await within(300 + SLACK_MS, 'silent connections', Promise.all(connections.map((connection) => connection.closed)));
  for (const { ms } of results) expect(ms).toBeGreaterThanOrEqual(250);
});

test('a client sending its headers a few bytes at a time (slowloris) is closed after HEADERS_TIMEOUT_MS', async () => {
  const { socket, closed } = await rawConnection(server.port);
  socket.write('GET /api HTTP/1.1\r\nHost: localhost\r\n');
  let line = 0;
  const drip = setInterval(() => socket.writable && socket.write(`x-slow-${line++}: y\r\n`), 50);
  try {
    const { ms, received } = await within(400 + SLACK_MS, 'slow-header connection', closed);
    expect(ms).toBeGreaterThanOrEqual(350);
    // Node answers 408 when the headers timeout strikes, then closes.
    expect(received).toMatch(/^HTTP\/1\.1 408/);
  } finally {
    clearInterval(drip);
  }
});

test('an idle keep-alive HTTP/1.1 connection is closed after KEEP_ALIVE_TIMEOUT_MS', async () => {
  const { socket, closed } = await rawConnection(server.port);
  socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
  // Node advertises `Keep-Alive: timeout=…` and closes 1 s after it, so clients close first.
  const { received } = await within(300 + 1000 + SLACK_MS, 'keep-alive connection', closed);
  expect(received).toMatch(/^HTTP\/1\.1 200/);
  expect(received).toMatch(/keep-alive/i);
});

test('an idle HTTP/2 session gets a GOAWAY after HTTP2_IDLE_TIMEOUT_MS', async () => {
  const session = http2.connect(server.url);
  session.on('error', () => undefined);
  const goaway = once(session, 'goaway');
  const stream = session.request({ ':path': '/healthz' });
  stream.resume();
  await once(stream, 'end');
  await within(300 + SLACK_MS, 'idle HTTP/2 session', goaway);
  await within(SLACK_MS, 'HTTP/2 session after GOAWAY', once(session, 'close'));
});

test(
  'close() after a keep-alive request returns at once (no wait for the idle connection)',
  async () => {
    const own = await startServer();
    const agent = new http.Agent({ keepAlive: true });
    try {
      const status = await new Promise<number>((resolve, reject) => {
        http
          .get(`${own.url}/healthz`, { agent }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          })
          .on('error', reject);
      });
      expect(status).toBe(200);
      const started = performance.now();
      await own.close();
      // Was 3 s (the idle socket was never closed by the server); now the store's close dominates.
      expect(performance.now() - started).toBeLessThan(1000);
    } finally {
      agent.destroy();
    }
  },
  budget(20_000),
);

test(
  'on shutdown, a stalled request is cut at the end of SHUTDOWN_GRACE_MS and a half-sent one at once',
  async () => {
    const own = await startServer(TIMEOUTS);
    // In flight: the headers are in, the body never completes.
    const stalled = await rawConnection(own.port);
    stalled.socket.write('POST /api/auth HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"name":');
    // Not yet a request: headers still arriving.
    const halfSent = await rawConnection(own.port);
    halfSent.socket.write('GET /api HTTP/1.1\r\nHost: loc');
    // The server has the stalled request once its response to a later request on another connection arrives.
    await fetch(`${own.url}/healthz`).then((response) => response.text());
    const started = performance.now();
    const closing = own.close();
    await within(SLACK_MS, 'half-sent request on shutdown', halfSent.closed);
    expect(performance.now() - started).toBeLessThan(400);
    await within(500 + SLACK_MS, 'stalled request at the end of the grace', stalled.closed);
    await closing;
    expect(performance.now() - started).toBeGreaterThanOrEqual(450);
  },
  budget(20_000),
);

test('the timeouts are validated: whole milliseconds in range, and headers within the request timeout', () => {
  expect(loadConfig({}).headersTimeoutMs).toBe(20_000);
  expect(() => loadConfig({ FIRST_BYTE_TIMEOUT_MS: 'soon' })).toThrow(/FIRST_BYTE_TIMEOUT_MS must be a whole number/);
  expect(() => loadConfig({ HTTP2_IDLE_TIMEOUT_MS: '0' })).toThrow(/HTTP2_IDLE_TIMEOUT_MS must be between/);
  expect(() => loadConfig({ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '1000' })).toThrow(ConfigError);
});
