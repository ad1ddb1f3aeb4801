import { createRestApi, type RestApi } from '../../../src/http/rest-api.js';
import { renderProblemDetails } from '../../../src/http/problem-details.js';
import { normalizeAnyPath, normalizePath, requestPartsOf } from '../../../src/http/rest-engine/matcher.js';
import { validateParameters } from '../../../src/http/rest-engine/validator.js';
import { ROOT } from '../../../src/server/paths.js';

// The REST engine's adapter (src/http/rest-engine/README.md) re-implements openapi-backend's matcher and,
// for a request without query string or body, its validateRequest. These tests hold it to the
// installed openapi-backend: the same operation for every request line below, the same validation
// result; the one deliberate difference (a root template narrowed by its format) is asserted too.

const CONTRACTS = ['users', 'publishing', 'webhooks'] as const;
const UUID = '0b6f4a57-3f55-4d1e-9e8a-3c2f5b1d7a90';
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** Values each path parameter is tried with: well-formed, malformed, percent-encoded, empty-looking. */
const VALUES = [UUID, 'alice', '42', 'a%20b', 'x.y'];
/** Paths that are no template's: other APIs', the server's own, near misses. */
const OTHER_PATHS = [
  '/',
  '/healthz',
  '/api',
  '/api/',
  '/v1',
  '/routes/',
  '/inspect',
  '/inspect/',
  '/nope/deeper/still',
  `/${UUID}`,
  `/${UUID}/a/b`,
  '//api/users',
];

const engines = new Map<string, RestApi>();
beforeAll(async () => {
  for (const name of CONTRACTS) {
    engines.set(name, await createRestApi({ contractPath: `${ROOT}contracts/openapi/${name}.yaml`, handlers: {}, renderError: renderProblemDetails }));
  }
});

/** Request paths made from every template of the contract, each parameter with each value, with and without a trailing slash. */
function pathsOf(rest: RestApi): string[] {
  const paths = new Set(OTHER_PATHS);
  for (const operation of rest.api.router.getOperations()) {
    for (const value of VALUES) {
      const path = operation.path.replace(/\{[^}]+\}/g, value);
      paths.add(path);
      paths.add(`${path}/`);
    }
  }
  return [...paths];
}

/** Whether a path falls under the engine's one deliberate difference: a root template whose format the first segment does not have. */
function narrowedAway(rest: RestApi, method: string, path: string): boolean {
  const upstream = rest.api.router.matchOperation({ method, path, headers: {} });
  return upstream !== undefined && /^\/\{[^}]+\}/.test(upstream.path) && !path.startsWith(`/${UUID}`);
}

describe.each(CONTRACTS)('the %s contract', (name) => {
  test('the engine matches every request line to the operation openapi-backend matches (root templates narrowed by format)', () => {
    const rest = engines.get(name)!;
    let compared = 0;
    for (const path of pathsOf(rest)) {
      for (const method of METHODS) {
        const upstream = rest.api.router.matchOperation({ method, path, headers: {} });
        const ours = rest.match(method, path);
        if (narrowedAway(rest, method, path)) expect({ method, path, operation: ours?.operationId }).toEqual({ method, path, operation: undefined });
        else expect({ method, path, operation: ours?.operationId }).toEqual({ method, path, operation: upstream?.operationId });
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(100);
  });

  test('for a request without query or body, the precompiled path parser and validators give what validateRequest gives', () => {
    const rest = engines.get(name)!;
    let compared = 0;
    for (const operation of rest.api.router.getOperations()) {
      const parts = requestPartsOf(operation);
      if (parts.headerOrCookieParameters) continue;
      for (const value of VALUES) {
        const path = operation.path.replace(/\{[^}]+\}/g, value);
        const headers = { accept: 'application/json' };
        const upstream = rest.api.validator.validateRequest({ method: operation.method, path, query: '', headers }, operation);
        const ours = validateParameters(rest.api, operation, parts.pathParameters(path) ?? {}, headers);
        expect({ path, errors: ours.errors ?? null, params: ours.coerced.params }).toEqual({
          path,
          errors: upstream.errors ?? null,
          params: upstream.coerced?.params,
        });
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(0);
  });
});

test('the capture templates (/{routeId}…) claim no path whose first segment is not a UUID, and every path that has one', () => {
  const webhooks = engines.get('webhooks')!;
  for (const path of ['/healthz', '/api/users/1', '/v1/articles', '/metrics']) expect(webhooks.match('GET', path)).toBeUndefined();
  expect(webhooks.match('POST', `/${UUID}`)?.path).toBe('/{routeId}');
  expect(webhooks.match('POST', `/${UUID}/deep`)?.path).toBe('/{routeId}/{subPath}');
});

test('normalizePath gives what the general rule gives for every path, already normal ones included', () => {
  const inputs = [
    '',
    '/',
    '//',
    '///',
    '/a',
    '/a/',
    '/a//',
    '//a',
    '///a',
    'a',
    'a/',
    ' /a ',
    '/a ',
    '/a\t',
    '/a\u00a0',
    '\u00a0/a',
    '/a?x=1',
    '/a/?x',
    '/?',
    '?x',
    '/api/users/0b6f4a57-3f55-4d1e-9e8a-3c2f5b1d7a90',
    '/api/users/a%20b',
    '/a b',
    '/a/b/c/',
    '/\u2028',
    '/a\u2028b',
  ];
  for (const input of inputs) expect({ input, normalized: normalizePath(input) }).toEqual({ input, normalized: normalizeAnyPath(input) });
});
