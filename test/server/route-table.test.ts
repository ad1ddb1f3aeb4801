import { GET_HEAD, RouteTable, type Route } from '../../src/server/route-table.js';
import { startServer, type TestServer } from '../support/app.js';

// The one route table: which route serves a request line, and what the server answers when none does.

const served = (name: string) => () => name;
const ROUTES: Route[] = [
  { path: '/healthz', methods: GET_HEAD, handle: served('health') },
  { pattern: /^\/[0-9a-f]{8}(?:\/|$)/, handle: served('capture') },
  { prefix: '/api', handle: served('users') },
  { prefix: '/openapi/', methods: GET_HEAD, handle: served('documents') },
  { path: '/inspect', methods: ['GET'], handle: served('open inspector') },
  { prefix: '/inspect', handle: served('webhooks contract') },
];
const table = new RouteTable(ROUTES);

const cases: Array<[string, { given: [string, string]; want: string | undefined }]> = [
  ['an exact path with its method', { given: ['GET', '/healthz'], want: 'health' }],
  ['HEAD where a route names it', { given: ['HEAD', '/healthz'], want: 'health' }],
  ['a prefix covers itself', { given: ['DELETE', '/api'], want: 'users' }],
  ['a prefix covers the paths below it', { given: ['PUT', '/api/users/1'], want: 'users' }],
  ['a prefix does not cover a longer segment', { given: ['GET', '/apis'], want: undefined }],
  ['a prefix ending in / covers only the paths below it', { given: ['GET', '/openapi'], want: undefined }],
  ['a pattern, every method', { given: ['OPTIONS', '/0123abcd/hook'], want: 'capture' }],
  ['an exact path whose methods do not fit falls to a later route', { given: ['POST', '/inspect'], want: 'webhooks contract' }],
  ['the exact route wins over a prefix declared after it', { given: ['GET', '/inspect'], want: 'open inspector' }],
  ['no route', { given: ['GET', '/nothing'], want: undefined }],
];

test.each(cases)('%s', (_name, { given: [method, path], want }) => {
  const route = table.find(method, path);
  expect(route ? route.handle({} as never, {} as never, '', path) : undefined).toBe(want);
});

test('a path served only with other methods lists them (the 405 Allow); a path nobody serves lists none (404)', () => {
  expect(table.allowed('/healthz')).toEqual(['GET', 'HEAD']);
  expect(table.allowed('/openapi/users.yaml')).toEqual(['GET', 'HEAD']);
  expect(table.allowed('/nothing')).toEqual([]);
});

describe('the server built from every module', () => {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server?.close());

  test('a path no route serves is a 404 in the server shape; a path served with other methods a 405 naming them', async () => {
    const missing = await server!.request('GET', '/no/such/path', { unchecked: true });
    expect([missing.status, missing.body]).toEqual([404, { statusCode: 404, message: 'Not Found', error: 'Not Found' }]);
    const wrongMethod = await server!.request('POST', '/healthz', { unchecked: true });
    expect([wrongMethod.status, wrongMethod.headers.get('allow'), wrongMethod.body]).toEqual([
      405,
      'GET, HEAD',
      { statusCode: 405, message: 'Method Not Allowed', error: 'Method Not Allowed' },
    ]);
  });

  test('every route of every module is in the one table, and a UUID path reaches capture, not another API', () => {
    const { routes } = server!.app.routes;
    expect(routes.some((route) => route.prefix === '/api')).toBe(true);
    expect(routes.some((route) => route.path === '/metrics' || route.path === '/healthz')).toBe(true);
    expect(server!.app.routes.find('GET', '/healthz')?.path).toBe('/healthz');
    expect(server!.app.routes.find('POST', '/0b6f4a57-3f55-4d1e-9e8a-3c2f5b1d7a90/x')?.corsExempt).toBe(true);
  });
});
