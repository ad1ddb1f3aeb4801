import { loadConfig, ConfigError } from '../../src/config.js';
import { startServer, type TestServer } from '../support/app.js';
import { createRoute, rawRequest } from '../modules/webhooks/support.js';
import { budget } from '../support/budget.js';

const APP = 'http://app.example.test:3000';

let open: TestServer;
let plain: TestServer;
beforeAll(async () => {
  [open, plain] = await Promise.all([startServer({ CORS_ORIGINS: `${APP}, https://other.example.test` }), startServer()]);
}, budget(10_000));
afterAll(() => Promise.all([open?.close(), plain?.close()]));

const preflight = (server: TestServer, path: string, origin = APP, requestHeaders = 'authorization, content-type') =>
  rawRequest(`${server.url}${path}`, 'OPTIONS', [
    ['Origin', origin],
    ['Access-Control-Request-Method', 'POST'],
    ['Access-Control-Request-Headers', requestHeaders],
  ]);

test('a preflight from an allowed origin is answered 204 with the methods and the REST, Connect and gRPC-Web headers', async () => {
  for (const path of ['/api/users', '/v1/articles', '/cloud.compute.v1.InstanceService/Create', '/graphql']) {
    const answer = await preflight(open, path, APP, 'connect-protocol-version, content-type');
    expect(answer.status).toBe(204);
    expect(answer.body.length).toBe(0);
    expect(answer.headers['access-control-allow-origin']).toBe(APP);
    expect(answer.headers.vary).toBe('Origin');
    expect(answer.headers['access-control-allow-methods']).toBe('GET, HEAD, POST, PUT, PATCH, DELETE');
    const allowed = String(answer.headers['access-control-allow-headers']).split(', ');
    for (const header of [
      'authorization',
      'content-type',
      'x-idempotency-key',
      'x-resetmask',
      'connect-protocol-version',
      'connect-timeout-ms',
      'grpc-timeout',
      'x-grpc-web',
      'x-user-agent',
      'traceparent',
    ]) {
      expect(allowed).toContain(header);
    }
    expect(answer.headers['access-control-max-age']).toBe('7200');
  }
});

test('an actual request from an allowed origin may read the exposed headers; another origin gets no CORS headers', async () => {
  const allowed = await rawRequest(`${open.url}/api`, 'GET', [['Origin', APP]]);
  expect(allowed.status).toBe(200);
  expect(allowed.headers['access-control-allow-origin']).toBe(APP);
  const exposed = String(allowed.headers['access-control-expose-headers']).split(', ');
  for (const header of ['grpc-status', 'grpc-message', 'grpc-status-details-bin', 'x-request-id', 'retry-after', 'traceparent'])
    expect(exposed).toContain(header);
  expect(allowed.headers.vary).toBe('Origin');

  const stranger = await rawRequest(`${open.url}/api`, 'GET', [['Origin', 'https://evil.example.test']]);
  expect(stranger.headers['access-control-allow-origin']).toBeUndefined();
  const strangerPreflight = await preflight(open, '/api/users', 'https://evil.example.test');
  expect(strangerPreflight.headers['access-control-allow-origin']).toBeUndefined();
  expect(strangerPreflight.status).not.toBe(204);
});

test('without CORS_ORIGINS no response carries CORS headers and OPTIONS is not answered as a preflight', async () => {
  const answer = await preflight(plain, '/api/users');
  expect(answer.status).not.toBe(204);
  expect(answer.headers['access-control-allow-origin']).toBeUndefined();
  const rpc = await preflight(plain, '/grpc.health.v1.Health/Check');
  expect(rpc.headers['access-control-allow-origin']).toBeUndefined();
  const actual = await rawRequest(`${plain.url}/api`, 'GET', [['Origin', APP]]);
  expect(actual.headers['access-control-allow-origin']).toBeUndefined();
  expect(actual.headers.vary).toBeUndefined();
});

test('webhook capture paths keep capturing OPTIONS, preflight-shaped or not, with no CORS headers', async () => {
  const { routeId } = await createRoute(open);
  const answer = await preflight(open, `/${routeId}/hook`);
  expect(answer.status).toBe(200);
  expect(answer.headers['access-control-allow-origin']).toBeUndefined();
  const listed = await open.request('GET', `/inspect/${routeId}`, { headers: { accept: 'application/json' } });
  expect(listed.body.items.map((item: { method: string }) => item.method)).toEqual(['OPTIONS']);
});

test('CORS_ORIGINS is validated: origins only (scheme, host, port), or * alone', () => {
  expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
  expect(loadConfig({ CORS_ORIGINS: 'https://A.example.com, http://localhost:5173,' }).corsOrigins).toEqual(['https://a.example.com', 'http://localhost:5173']);
  expect(loadConfig({}).corsOrigins).toEqual([]);
  for (const bad of ['https://a.example.com/path', 'a.example.com', 'ftp://a.example.com', '*, https://a.example.com']) {
    expect(() => loadConfig({ CORS_ORIGINS: bad })).toThrow(ConfigError);
  }
});
