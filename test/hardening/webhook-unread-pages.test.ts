import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { once } from 'node:events';
import { startServer, type TestServer } from '../support/app.js';
import { createRoute, rawRequest } from '../modules/webhooks/support.js';

/**
 * Issue 31, item 8: a reply the client does not read costs bounded work. One anonymous address opens
 * 5 HTTP/2 sessions that announce a flow-control window of 0 and asks each for 100 large inspection
 * pages it never reads; a bystander on another address must be answered within 1 s meanwhile.
 */
const ATTACKER = '127.0.0.3';
const BYSTANDER = '127.0.0.2';
const SESSIONS = 5;
const STREAMS_PER_SESSION = 100;
/** Captures on the attacked route, each about 200 KB as a list item: a 4 MiB page holds ~20 of them. */
const CAPTURES = 120;
const CAPTURE_BYTES = 60 * 1024;
/** The bound for the bystander; each of its answers must come within it. */
const BYSTANDER_GOAL_MS = 1000;
/** How long the bystander keeps asking while the unread streams are held open. */
const WATCH_MS = 4000;
const READS_PER_ADDRESS = 4;

let server: TestServer | undefined;
beforeAll(async () => {
  // The stall reset is pushed past the watch, so the unread streams stay open all through it.
  server = await startServer({ HTTP2_STALL_TIMEOUT_MS: '60000', WEBHOOK_BATCH_MS: '1', WEBHOOK_READS_PER_ADDRESS: String(READS_PER_ADDRESS) });
}, 60_000);
afterAll(() => server?.close());

/** An HTTP/2 session from `from` that never lets the server send a byte of any answer. */
function unreadSession(from: string): http2.ClientHttp2Session {
  const session = http2.connect(server!.url, {
    settings: { initialWindowSize: 0 },
    createConnection: () => net.connect({ host: '127.0.0.1', port: server!.port, localAddress: from }),
  });
  session.on('error', () => undefined);
  return session;
}

/** A bystander's answer that has not come within this long is recorded as failed (status 0) and the watch goes on. */
const GIVE_UP_MS = 10_000;

/** One GET over a new HTTP/1.1 connection from `from`: its status, Retry-After and how long the whole answer took. */
function timedGet(path: string, from: string, accept = '*/*'): Promise<{ status: number; ms: number; retryAfter?: string | undefined }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const request = http.get(`${server!.url}${path}`, { agent: false, localAddress: from, headers: { accept }, timeout: GIVE_UP_MS }, (response) => {
      response.resume();
      response.once('end', () => resolve({ status: response.statusCode ?? 0, ms: performance.now() - started, retryAfter: response.headers['retry-after'] }));
    });
    request.once('timeout', () => request.destroy(new Error('timeout')));
    request.once('error', () => resolve({ status: 0, ms: performance.now() - started }));
  });
}

test('5 HTTP/2 sessions x 100 never-read large pages from one address leave a bystander on another address answered within 1 s', async () => {
  const attacked = await createRoute(server!);
  const body = Buffer.from(JSON.stringify({ data: 'x'.repeat(CAPTURE_BYTES) }));
  for (let index = 0; index < CAPTURES; index += 8) {
    await Promise.all(
      Array.from({ length: 8 }, async () => expect((await rawRequest(attacked.url, 'POST', [['Content-Type', 'application/json']], body)).status).toBe(200)),
    );
  }
  const quiet = await createRoute(server!);
  expect((await rawRequest(quiet.url, 'POST', [['Content-Type', 'application/json']], '{"small":true}')).status).toBe(200);

  const sessions = Array.from({ length: SESSIONS }, () => unreadSession(ATTACKER));
  const statuses = new Map<number, number>();
  try {
    await Promise.all(sessions.map((session) => once(session, 'remoteSettings')));
    for (const session of sessions) {
      for (let index = 0; index < STREAMS_PER_SESSION; index++) {
        const stream = session.request({ ':path': `/inspect/${attacked.routeId}?limit=500`, accept: 'application/json' });
        stream.on('error', () => undefined);
        stream.pause();
        stream.once('response', (headers) => {
          const status = Number(headers[':status']);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        });
      }
    }
    // Every stream has reached the server once a ping sent after them is answered.
    await Promise.all(sessions.map((session) => new Promise((resolve) => session.ping(resolve))));

    const answers: Array<{ path: string; status: number; ms: number }> = [];
    const until = performance.now() + WATCH_MS;
    while (performance.now() < until) {
      for (const [path, accept] of [
        ['/healthz', '*/*'],
        [`/inspect/${quiet.routeId}?limit=5`, 'application/json'],
      ] as const) {
        answers.push({ path, ...(await timedGet(path, BYSTANDER, accept)) });
      }
    }
    expect(answers.length).toBeGreaterThanOrEqual(2);
    expect(answers.filter((answer) => answer.status !== 200 || answer.ms >= BYSTANDER_GOAL_MS)).toEqual([]);
    // The attacker got at most its bound of pages started; the rest were refused (429 here, or
    // REFUSED_STREAM past HTTP2_MAX_STREAMS_PER_ADDRESS), not queued.
    expect(statuses.get(200) ?? 0).toBeLessThanOrEqual(READS_PER_ADDRESS);
    expect(statuses.get(429) ?? 0).toBeGreaterThan(0);
  } finally {
    for (const session of sessions) session.destroy();
  }
  // Once the attacker is gone its reads are given back (as its streams close): a page read normally
  // is served whole, after at most a few Retry-After waits.
  let page = await timedGet(`/inspect/${attacked.routeId}?limit=500`, ATTACKER, 'application/json');
  for (let attempt = 0; page.status === 429 && attempt < 10; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, Number(page.retryAfter) * 1000));
    page = await timedGet(`/inspect/${attacked.routeId}?limit=500`, ATTACKER, 'application/json');
  }
  expect(page.status).toBe(200);
}, 240_000);
