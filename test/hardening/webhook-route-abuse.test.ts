import { startServer, type TestServer } from '../support/app.js';
import { loadConfig } from '../../src/config.js';
import { RouteCache } from '../../src/services/webhooks/route-cache.js';
import { clientKey } from '../../src/services/client-address.js';
import { WebhookService } from '../../src/services/webhooks/webhook-service.js';
import type { RouteRow } from '../../src/store/repositories/webhook-repository.js';
import { createRoute, rawRequest } from '../modules/webhooks/support.js';

const LIMIT = 5;
let server: TestServer;

beforeAll(async () => {
  server = await startServer({ WEBHOOK_ROUTE_LIMIT: String(LIMIT), WEBHOOK_ROUTE_WINDOW_SECONDS: '60' });
});
afterAll(() => server?.close());

describe('route creation is limited per client address', () => {
  test('after WEBHOOK_ROUTE_LIMIT routes, POST /routes and GET /inspect answer 429 with Retry-After in problem details; refused input costs nothing', async () => {
    // A refused creation does not use up the allowance.
    for (let i = 0; i < LIMIT + 2; i++) expect((await server.request('POST', '/routes', { body: { ttlSeconds: 0 } })).status).toBe(400);
    for (let i = 0; i < LIMIT - 1; i++) await createRoute(server);
    const viaBrowser = await server.request('GET', '/inspect', { unchecked: true });
    expect(viaBrowser.status).toBe(200); // fetch followed the redirect to the new route's page

    const refused = await server.request('POST', '/routes', { body: {} });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ type: 'about:blank', title: 'Too Many Requests', status: 429 });
    expect(refused.body.detail).toMatch(new RegExp(`at most ${LIMIT} per 60 s`));
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);

    const inspect = await fetch(`${server.url}/inspect`, { redirect: 'manual' });
    expect(inspect.status).toBe(429);
    expect(inspect.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await inspect.json()).toMatchObject({ status: 429, title: 'Too Many Requests' });
  });

  test.each([
    ['IPv4', '192.0.2.7', '192.0.2.7'],
    ['IPv4-mapped IPv6', '::ffff:192.0.2.7', '192.0.2.7'],
    ['IPv6, counted per /64', '2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['IPv6 shortened', '2001:db8::1', '2001:db8:0:0::/64'],
    ['IPv6 of another /64', '2001:db8:1:3::1', '2001:db8:1:3::/64'],
  ])('the client key of %s', (_name, address, want) => {
    expect(clientKey(address)).toBe(want);
  });
});

describe('the route cache is bounded by bytes', () => {
  const bigRoute = (id: string): RouteRow => ({
    id,
    createdAt: new Date(0),
    expiresAt: new Date(Date.now() + 60_000),
    response: { status: 200, headers: { 'x-pad': 'p'.repeat(4000) }, body: 'b'.repeat(60_000) },
    delayMs: 0,
    verify: null,
  });

  test('routes with large responses are dropped least recently used first, within the byte budget', () => {
    const maxBytes = 1024 * 1024;
    const cache = new RouteCache(async () => undefined, 60_000, 10_000, Date.now, maxBytes);
    cache.remember('keep', bigRoute('keep'));
    for (let i = 0; i < 200; i++) {
      cache.remember(`r${i}`, bigRoute(`r${i}`));
      // Looking it up keeps the first route the most recently used.
      expect(cache.lookup('keep')).not.toBeNull();
      expect(cache.heldBytes).toBeLessThanOrEqual(maxBytes);
    }
    expect(cache.heldBytes).toBeGreaterThan(maxBytes / 2);
    expect(cache.lookup('keep')).not.toBeNull();
    expect(cache.lookup('r0')).toBeInstanceOf(Promise); // evicted: it would be loaded again
  });

  test('routes created through the service stay within WEBHOOK_ROUTE_CACHE_BYTES', async () => {
    const config = loadConfig({ WEBHOOK_ROUTE_CACHE_BYTES: String(256 * 1024), WEBHOOK_ROUTE_LIMIT: '1000' });
    const service = new WebhookService(server.app.db.knex, config);
    for (let i = 0; i < 20; i++) {
      await service.createRoute(
        { ttlSeconds: 60, response: { status: 200, headers: { 'x-pad': 'p'.repeat(4000) }, body: 'b'.repeat(60_000) } },
        'http://x',
        '192.0.2.9',
      );
    }
    expect(service.routeCacheBytes).toBeLessThanOrEqual(256 * 1024);
    expect(service.routeCacheBytes).toBeGreaterThan(100 * 1024);
    await service.stop();
  });
});

describe("a route's response cannot act on this origin", () => {
  test.each([
    ['Set-Cookie', 'session=evil; Path=/'],
    ['Location', 'https://evil.example/'],
    ['Refresh', '0; url=https://evil.example/'],
    ['Access-Control-Allow-Origin', '*'],
    ['Access-Control-Allow-Credentials', 'true'],
    ['Link', '</x.js>; rel=preload'],
    ['Content-Disposition', 'attachment; filename=x.exe'],
    ['WWW-Authenticate', 'Basic realm="login"'],
    ['Content-Security-Policy', 'default-src *'],
    ['X-Frame-Options', 'ALLOWALL'],
    ['X-Accel-Redirect', '/internal/secret'],
    ['Content-Length', '3'],
  ])('%s is refused at creation with 400 naming it', async (name, value) => {
    const response = await server.request('POST', '/routes', { body: { response: { headers: { [name]: value } } } });
    expect(response.status).toBe(400);
    expect(response.body.errors).toEqual([{ field: `response.headers.${name}`, message: expect.stringContaining(`${name} is not allowed`) }]);
  });

  test.each(['text/html', 'text/html; charset=utf-8', 'application/xhtml+xml', 'image/svg+xml', 'text/javascript', 'application/json, text/html'])(
    'Content-Type %s is refused',
    async (type) => {
      const response = await server.request('POST', '/routes', {
        body: { response: { headers: { 'Content-Type': type }, body: '<script>alert(1)</script>' } },
      });
      expect(response.status).toBe(400);
      expect(response.body.errors[0]).toEqual({
        field: 'response.headers.Content-Type',
        message: expect.stringMatching(/not allowed as a route's Content-Type/),
      });
    },
  );
});

describe('every answer of the capture path is sandboxed', () => {
  // Fresh server: the allowance of the main one is spent by the rate-limit test.
  let open: TestServer;
  beforeAll(async () => {
    open = await startServer();
  });
  afterAll(() => open?.close());

  const guarded = (headers: Record<string, unknown>) => {
    expect(headers['content-security-policy']).toBe("default-src 'none'; sandbox");
    expect(headers['x-content-type-options']).toBe('nosniff');
  };

  test('a configured response with safe headers is served with CSP sandbox and nosniff', async () => {
    const { routeId } = await createRoute(open, {
      response: {
        status: 202,
        headers: { 'X-Hook': 'yes', 'Content-Type': 'application/json', 'Retry-After': '5', 'Cache-Control': 'no-store' },
        body: '{"ok":1}',
      },
    });
    const answer = await rawRequest(`${open.url}/${routeId}`, 'POST', [['Content-Type', 'text/plain']], 'hi');
    expect(answer.status).toBe(202);
    expect(answer.headers['x-hook']).toBe('yes');
    expect(answer.headers['retry-after']).toBe('5');
    expect(answer.body.toString()).toBe('{"ok":1}');
    guarded(answer.headers);
  });

  test('the default acknowledgement and the 404 of an unknown route are sandboxed too', async () => {
    const { routeId } = await createRoute(open);
    guarded((await rawRequest(`${open.url}/${routeId}/x`, 'GET')).headers);
    const unknown = await rawRequest(`${open.url}/6f1c0a8e-2d4b-4c3e-9f5a-7b8c9d0e1f2a`, 'GET');
    expect(unknown.status).toBe(404);
    guarded(unknown.headers);
  });
});
