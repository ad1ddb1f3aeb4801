import { networkInterfaces } from 'node:os';
import { Writable } from 'node:stream';
import { build, type App } from '../../src/server/build.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { isLocalClient } from '../../src/services/client-address.js';
import { closeWhenFileEnds } from '../support/left-open.js';
import { expectMatchesContract, openTestDatabase, type TestResponse } from '../support/app.js';

/**
 * A fresh server cannot be claimed by a stranger (docs/users-api.md, "First run"): while no admin
 * exists, creating one needs a client on the server's own machine or the setup code it logged.
 * "Another machine" is this host's own non-loopback address: the server sees that address as the peer.
 */
const EXTERNAL = Object.values(networkInterfaces())
  .flat()
  .find((entry) => entry?.family === 'IPv4' && !entry.internal)?.address;

interface FreshServer {
  app: App;
  port: number;
  logLines: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/** A server on all interfaces over a fresh, empty database, its log lines kept. */
async function startFresh(env: Record<string, string> = {}, database?: App['db']): Promise<FreshServer> {
  // A shared database stays open for its owner (the first server) when this one closes.
  const opened = database ? { db: { ...database, close: async () => undefined }, drop: async () => undefined } : await openTestDatabase();
  const logLines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) logLines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const app = await build(loadConfig({ MIGRATE: 'false', ...env }), { database: opened.db, logger: createLogger('warn', sink) });
  const close = closeWhenFileEnds(async () => {
    await app.close();
    await opened.db.close();
    await opened.drop();
  });
  const port = await app.listen(0, '0.0.0.0');
  return { app, port, logLines, close };
}

async function send(
  server: FreshServer,
  host: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<TestResponse> {
  const response = await fetch(`http://${host}:${server.port}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const result: TestResponse = {
    status: response.status,
    headers: response.headers,
    text,
    body: /json/.test(response.headers.get('content-type') ?? '') ? JSON.parse(text) : text,
  };
  expectMatchesContract(server.app, method, path, result);
  return result;
}

function loggedSetupCode(server: FreshServer): string | undefined {
  return server.logLines.find((line) => typeof line.setupCode === 'string')?.setupCode as string | undefined;
}

async function userCount(server: FreshServer): Promise<number> {
  return Number((await server.app.db.knex('users').count<{ n: string }[]>('* as n'))[0]?.n);
}

test.each<[string, string | undefined, string[], Record<string, string>, boolean]>([
  ['a loopback peer with no forwarding header', '127.0.0.1', [], {}, true],
  ['an IPv6 loopback peer', '::1', [], {}, true],
  ['an IPv4-mapped loopback peer', '::ffff:127.0.0.5', [], {}, true],
  ['a loopback peer that says it forwards for someone (a proxy on this host)', '127.0.0.1', [], { 'x-forwarded-for': '203.0.113.9' }, false],
  ['a loopback peer with a Forwarded header', '127.0.0.1', [], { forwarded: 'for=203.0.113.9' }, false],
  ['a loopback peer with X-Real-IP', '127.0.0.1', [], { 'x-real-ip': '203.0.113.9' }, false],
  ['a loopback client named by a trusted proxy (PROXY protocol or X-Forwarded-For)', '127.0.0.1', ['127.0.0.1'], {}, false],
  ['another machine', '192.0.2.7', [], {}, false],
  ['an address that only starts like loopback', '127.0.0.1.example', [], {}, false],
  ['no address at all', undefined, [], {}, false],
])('is %s local? (isLocalClient)', (_name, address, proxies, headers, want) => {
  expect(isLocalClient({ address, proxies }, headers)).toBe(want);
});

describe('a fresh server reached from another machine', () => {
  let server: FreshServer;
  beforeAll(async () => {
    if (!EXTERNAL) throw new Error('this test needs a non-loopback IPv4 interface on the host');
    server = await startFresh();
  });
  afterAll(() => server?.close());

  test('logs a setup code at start while no admin exists', () => {
    expect(loggedSetupCode(server)).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$/);
    const line = server.logLines.find((entry) => entry.setupCode !== undefined);
    expect(line?.msg).toContain('X-Setup-Code');
  });

  test('cannot become the first admin by signing in, nor create users, without the setup code', async () => {
    const signIn = await send(server, EXTERNAL!, 'POST', '/api/auth', { name: 'mallory', password: 'mallory-password' });
    expect(signIn.status).toBe(403);
    expect(signIn.body).toMatchObject({ statusCode: 403, error: 'Forbidden', message: expect.stringContaining('X-Setup-Code') });
    const create = await send(server, EXTERNAL!, 'POST', '/api/users', { name: 'mallory', password: 'mallory-password', isAdmin: true });
    expect(create.status).toBe(403);
    const plain = await send(server, EXTERNAL!, 'POST', '/api/users', { name: 'mallory', password: 'mallory-password', isAdmin: false });
    expect(plain.status).toBe(403);
    expect(await userCount(server)).toBe(0);
  });

  test('a wrong setup code is refused like none, and counts as a failed sign-in', async () => {
    const wrong = await send(
      server,
      EXTERNAL!,
      'POST',
      '/api/auth',
      { name: 'mallory', password: 'mallory-password' },
      { 'x-setup-code': 'AAAA-BBBB-CCCC-DDDD' },
    );
    expect(wrong.status).toBe(403);
    const failures = await server.app.db.knex('limit_counters').where('key', 'like', 'sign-in:%').sum<{ n: string }[]>('count as n');
    expect(Number(failures[0]?.n)).toBeGreaterThan(0);
    expect(await userCount(server)).toBe(0);
  });

  test('a proxy on the server machine does not make its clients local', async () => {
    const proxied = await send(
      server,
      '127.0.0.1',
      'POST',
      '/api/auth',
      { name: 'mallory', password: 'mallory-password' },
      { 'x-forwarded-for': '203.0.113.9' },
    );
    expect(proxied.status).toBe(403);
    expect(await userCount(server)).toBe(0);
  });

  test('the setup code, typed loosely (lower case, no dashes), creates the first admin once; then the door is shut', async () => {
    const code = loggedSetupCode(server)!;
    const loose = code.toLowerCase().replace(/-/g, '');
    const admin = await send(server, EXTERNAL!, 'POST', '/api/auth', { name: 'owner', password: 'owner-password' }, { 'x-setup-code': loose });
    expect(admin.status).toBe(200);
    expect(admin.body.user).toMatchObject({ name: 'owner', isAdmin: true });
    expect(Number((await server.app.db.knex('setup_codes').count<{ n: string }[]>('* as n'))[0]?.n)).toBe(0);
    // Once an admin exists the code is spent and an unknown name is an ordinary failed sign-in.
    const again = await send(server, EXTERNAL!, 'POST', '/api/auth', { name: 'second', password: 'second-password' }, { 'x-setup-code': code });
    expect(again.status).toBe(401);
    const local = await send(server, '127.0.0.1', 'POST', '/api/auth', { name: 'third', password: 'third-password' });
    expect(local.status).toBe(401);
    expect(await userCount(server)).toBe(1);
  });
});

describe('a fresh server with several processes on one database', () => {
  test('every process logs the same setup code, and it works on any of them', async () => {
    const first = await startFresh();
    const second = await startFresh({}, first.app.db);
    try {
      const code = loggedSetupCode(first);
      expect(code).toBeDefined();
      expect(loggedSetupCode(second)).toBe(code);
      const created = await send(
        second,
        EXTERNAL!,
        'POST',
        '/api/users',
        { name: 'boss', password: 'boss-password', isAdmin: true },
        { 'x-setup-code': code! },
      );
      expect(created.status).toBe(200);
      expect(await userCount(first)).toBe(1);
    } finally {
      await second.close();
      await first.close();
    }
  });

  test('with ADMIN_USERNAME and ADMIN_PASSWORD no setup code is made or logged', async () => {
    const server = await startFresh({ ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'root-password-1' });
    try {
      expect(loggedSetupCode(server)).toBeUndefined();
      expect(Number((await server.app.db.knex('setup_codes').count<{ n: string }[]>('* as n'))[0]?.n)).toBe(0);
    } finally {
      await server.close();
    }
  });
});

describe('GET /metrics', () => {
  test('is served to this machine only by default, to everyone with METRICS_PUBLIC=true', async () => {
    const guarded = await startFresh();
    const open = await startFresh({ METRICS_PUBLIC: 'true' });
    try {
      const local = await fetch(`http://127.0.0.1:${guarded.port}/metrics`);
      expect(local.status).toBe(200);
      const remote = await fetch(`http://${EXTERNAL!}:${guarded.port}/metrics`);
      expect(remote.status).toBe(403);
      expect(await remote.json()).toMatchObject({ statusCode: 403, error: 'Forbidden', message: expect.stringContaining('METRICS_TOKEN') });
      const proxied = await fetch(`http://127.0.0.1:${guarded.port}/metrics`, { headers: { 'x-forwarded-for': '203.0.113.9' } });
      expect(proxied.status).toBe(403);
      expect((await fetch(`http://${EXTERNAL!}:${open.port}/metrics`)).status).toBe(200);
    } finally {
      await Promise.all([guarded.close(), open.close()]);
    }
  });
});
