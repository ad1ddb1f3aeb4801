import http2 from 'node:http2';
import net from 'node:net';
import { once } from 'node:events';
import { startServer, type TestServer } from '../support/app.js';

const { NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM, NGHTTP2_ENHANCE_YOUR_CALM } = http2.constants;

/** Small bounds so each case is quick; the defaults are in src/settings/table.ts and docs/hardening.md. */
const LIMITS = {
  HTTP2_MAX_STREAMS_PER_SECOND: '150',
  HTTP2_MAX_RESETS_PER_SECOND: '50',
  HTTP2_MAX_STREAMS_PER_ADDRESS: '8',
  HTTP2_STALL_TIMEOUT_MS: '400',
  HTTP2_ABUSE_COOLDOWN_MS: '5000',
  // One trusted proxy (docs/hardening.md, "Behind a proxy or load balancer"); every attacker above is untrusted.
  TRUST_PROXY: '127.0.0.6/32',
  PROXY_PROTOCOL: 'true',
};
const TRUSTED_PROXY = '127.0.0.6';
/** The attacker's own loopback address; the bystander connects from 127.0.0.1. Each case uses its own. */
const ATTACKERS = { rapidReset: '127.0.0.2', stalled: '127.0.0.3', bound: '127.0.0.4', streamFlood: '127.0.0.5' };
/** How much later than its timeout a stream may be reset (timer checks on a loaded machine). */
const SLACK_MS = 4000;

let server: TestServer | undefined;
beforeAll(async () => {
  server = await startServer(LIMITS);
});
afterAll(() => server?.close());

function connect(from: string, settings: http2.Settings = {}): http2.ClientHttp2Session {
  const session = http2.connect(server!.url, {
    settings,
    createConnection: () => net.connect({ host: '127.0.0.1', port: server!.port, localAddress: from }),
  });
  session.on('error', () => undefined);
  return session;
}

/** A GET on `session`; resolves with the stream's reset code once it closes (0 when it ended normally). */
function closedWith(stream: http2.ClientHttp2Stream): Promise<number> {
  stream.on('error', () => undefined);
  stream.resume();
  // Not `once`: it rejects on the 'error' a reset stream emits before it closes.
  return new Promise((resolve) => stream.once('close', () => resolve(stream.rstCode ?? 0)));
}

async function bystanderHealth(): Promise<number> {
  const response = await fetch(`${server!.url}/healthz`);
  await response.arrayBuffer();
  return response.status;
}

test('every session is told a bounded SETTINGS_MAX_CONCURRENT_STREAMS', async () => {
  const session = connect('127.0.0.1');
  try {
    const [settings] = (await once(session, 'remoteSettings')) as [http2.Settings];
    expect(settings.maxConcurrentStreams).toBe(100);
  } finally {
    session.destroy();
  }
});

test('a rapid reset flood over many connections closes each session early and refuses the address, while a bystander is served', async () => {
  const sessions = await Promise.all(
    Array.from({ length: 10 }, async () => {
      const session = connect(ATTACKERS.rapidReset);
      await once(session, 'connect');
      return session;
    }),
  );
  try {
    const sent = await Promise.all(
      sessions.map(async (session) => {
        let goaway = -1;
        session.once('goaway', (code: number) => (goaway = code));
        const closed = new Promise((resolve) => session.once('close', resolve));
        let count = 0;
        // HEADERS + RST_STREAM as fast as the client can, until the server ends the session.
        while (!session.destroyed && !session.closed && count < 5000) {
          const stream = session.request({ ':path': '/healthz' });
          stream.on('error', () => undefined);
          stream.close(NGHTTP2_CANCEL);
          count++;
          if (count % 20 === 0) await new Promise((resolve) => setImmediate(resolve));
        }
        await closed;
        return { count, code: goaway };
      }),
    );
    for (const { count } of sent) expect(count).toBeLessThan(5000);
    expect(sent.some(({ code }) => code === NGHTTP2_ENHANCE_YOUR_CALM)).toBe(true);
    // The address cools down: a new connection from it is closed without an answer.
    const again = net.connect({ host: '127.0.0.1', port: server!.port, localAddress: ATTACKERS.rapidReset });
    again.on('error', () => undefined);
    let received = 0;
    again.on('data', (chunk: Buffer) => (received += chunk.length));
    again.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await once(again, 'close');
    expect(received).toBe(0);
    expect(await bystanderHealth()).toBe(200);
  } finally {
    for (const session of sessions) session.destroy();
  }
});

test('a stream whose client never opens its flow-control window is reset after HTTP2_STALL_TIMEOUT_MS', async () => {
  const session = connect(ATTACKERS.stalled, { initialWindowSize: 0 });
  try {
    const started = performance.now();
    const code = await closedWith(session.request({ ':path': '/healthz' }));
    expect(code).toBe(NGHTTP2_CANCEL);
    expect(performance.now() - started).toBeGreaterThanOrEqual(350);
    expect(performance.now() - started).toBeLessThan(400 + SLACK_MS);
  } finally {
    session.destroy();
  }
});

test('streams held open by one address count against HTTP2_MAX_STREAMS_PER_ADDRESS over all its sessions', async () => {
  const sessions = [connect(ATTACKERS.bound, { initialWindowSize: 0 }), connect(ATTACKERS.bound, { initialWindowSize: 0 })];
  try {
    await Promise.all(sessions.map((session) => once(session, 'remoteSettings')));
    // Eight stalled streams over two sessions: the address's bound.
    const held = Array.from({ length: 8 }, (_, index) => closedWith(sessions[index % 2]!.request({ ':path': '/healthz' })));
    // Each of those reached the server once the next ping round trip is back.
    await Promise.all(sessions.map((session) => new Promise((resolve) => session.ping(resolve))));
    const refused = await closedWith(sessions[0]!.request({ ':path': '/healthz' }));
    expect(refused).toBe(NGHTTP2_REFUSED_STREAM);
    expect(await bystanderHealth()).toBe(200);
    // The held ones are reset as stalled in the end.
    expect(await Promise.all(held)).toEqual(Array.from({ length: 8 }, () => NGHTTP2_CANCEL));
  } finally {
    for (const session of sessions) session.destroy();
  }
});

test('a session opening more than HTTP2_MAX_STREAMS_PER_SECOND streams in a second is sent ENHANCE_YOUR_CALM and closed', async () => {
  const session = connect(ATTACKERS.streamFlood);
  try {
    let goaway = -1;
    session.once('goaway', (code: number) => (goaway = code));
    const closed = new Promise((resolve) => session.once('close', resolve));
    await once(session, 'remoteSettings');
    // 200 requests at once: the server sees them as fast as slots free (most are refused by the address bound of 8).
    const streams = Array.from({ length: 200 }, () => closedWith(session.request({ ':path': '/healthz' })));
    await closed;
    await Promise.all(streams);
    expect(goaway).toBe(NGHTTP2_ENHANCE_YOUR_CALM);
    expect(await bystanderHealth()).toBe(200);
  } finally {
    session.destroy();
  }
});

/** Two sessions from `from`, each window 0, whose streams stay open until the stall timeout resets them. */
async function heldStreams(sessions: http2.ClientHttp2Session[], perSession: number): Promise<Array<Promise<number>>> {
  await Promise.all(sessions.map((session) => once(session, 'remoteSettings')));
  const held = sessions.flatMap((session) => Array.from({ length: perSession }, () => closedWith(session.request({ ':path': '/healthz' }))));
  // Each of those reached the server once the next ping round trip is back.
  await Promise.all(sessions.map((session) => new Promise((resolve) => session.ping(resolve))));
  return held;
}

test('each session of a trusted HTTP proxy counts alone: its many clients are not held to one address bound', async () => {
  const sessions = [connect(TRUSTED_PROXY, { initialWindowSize: 0 }), connect(TRUSTED_PROXY, { initialWindowSize: 0 })];
  try {
    // 16 streams from the proxy's one address: twice the address bound, none refused.
    const held = await heldStreams(sessions, 8);
    expect(await Promise.all(held)).toEqual(Array.from({ length: 16 }, () => NGHTTP2_CANCEL));
  } finally {
    for (const session of sessions) session.destroy();
  }
});

test('with PROXY protocol the guard counts the client the header names, over all the proxy connections it comes through', async () => {
  const sessions = await Promise.all(
    [0, 1].map(async () => {
      const socket = net.connect({ host: '127.0.0.1', port: server!.port, localAddress: TRUSTED_PROXY });
      await once(socket, 'connect');
      socket.write(`PROXY TCP4 198.51.100.9 127.0.0.1 40000 ${server!.port}\r\n`);
      const session = http2.connect(server!.url, { settings: { initialWindowSize: 0 }, createConnection: () => socket });
      session.on('error', () => undefined);
      return session;
    }),
  );
  try {
    const held = await heldStreams(sessions, 4);
    expect(await closedWith(sessions[0]!.request({ ':path': '/healthz' }))).toBe(NGHTTP2_REFUSED_STREAM);
    expect(await Promise.all(held)).toEqual(Array.from({ length: 8 }, () => NGHTTP2_CANCEL));
  } finally {
    for (const session of sessions) session.destroy();
  }
});
