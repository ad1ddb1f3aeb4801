/**
 * What the contract fuzzer (scripts/fuzz-contract.ts) needs to know per OpenAPI contract beyond the
 * document itself: how to get a valid credential for each security scheme, and ids of resources that
 * exist (so generated requests reach past the 404s). A contract with no entry here is still fuzzed,
 * without credentials and with generated path values only.
 */

export interface FuzzFixtures {
  /** A valid token per security scheme name of the document (`bearerAuth`, `accessToken`…). */
  tokens: Record<string, string>;
  /** Existing values per path parameter name. */
  pathValues: Record<string, string[]>;
}

/** Server environment the fixtures rely on (a first admin and a publishing superuser). */
export const FUZZ_SERVER_ENV: Record<string, string> = {
  ADMIN_USERNAME: 'fuzz-admin',
  ADMIN_PASSWORD: 'fuzz-admin-password',
  SUPERUSER_EMAIL: 'fuzz-root@example.com',
  SUPERUSER_PASSWORD: 'fuzz-root-password',
  // Random sign-ins fail on purpose; keep the limit high enough for the fixtures to sign in first.
  SIGNIN_MAX_FAILURES: '5',
};

async function json(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), accept: 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

function expectStatus(what: string, got: { status: number; body: unknown }, want: number): void {
  if (got.status !== want) throw new Error(`fuzz fixture: ${what} answered ${got.status}: ${JSON.stringify(got.body)}`);
}

export const FUZZ_FIXTURES: Record<string, (url: string) => Promise<FuzzFixtures>> = {
  async users(url) {
    const signIn = await json(url, 'POST', '/api/auth', { name: FUZZ_SERVER_ENV.ADMIN_USERNAME, password: FUZZ_SERVER_ENV.ADMIN_PASSWORD });
    expectStatus('admin sign-in', signIn, 200);
    const token = String(signIn.body.accessToken);
    const other = await json(
      url,
      'POST',
      '/api/users',
      { name: 'fuzz-user', password: 'fuzz-user-password', isAdmin: false },
      { authorization: `Bearer ${token}` },
    );
    expectStatus('creating a user', other, 200);
    return { tokens: { bearerAuth: token }, pathValues: { id: [String((signIn.body.user as { id: string }).id), String(other.body.id)] } };
  },
  async publishing(url) {
    const login = await json(url, 'POST', '/v1/writers/login', { email: FUZZ_SERVER_ENV.SUPERUSER_EMAIL, password: FUZZ_SERVER_ENV.SUPERUSER_PASSWORD });
    expectStatus('superuser login', login, 200);
    const token = String(login.body.accessToken);
    const auth = { authorization: `Bearer ${token}` };
    const topic = await json(url, 'POST', '/v1/topics', { title: 'Fuzzing' }, auth);
    expectStatus('creating a topic', topic, 201);
    const article = await json(
      url,
      'POST',
      '/v1/articles',
      { title: 'Fuzzed', text: 'An article the fuzzer reads.', tags: ['fuzz'], topic: topic.body._id },
      auth,
    );
    expectStatus('creating an article', article, 201);
    const writerId = String((login.body.user as { _id: string })._id);
    return { tokens: { bearerAuth: token, accessToken: token }, pathValues: { id: [String(article.body._id), writerId, String(topic.body._id)] } };
  },
  async webhooks(url) {
    const route = await json(url, 'POST', '/routes', {});
    expectStatus('creating a route', route, 201);
    const routeId = String(route.body.routeId);
    const captured = await fetch(`${url}/${routeId}/fuzz?a=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"fuzz":true}' });
    await captured.arrayBuffer();
    const inspection = await json(url, 'GET', `/inspect/${routeId}`);
    expectStatus('inspecting the route', inspection, 200);
    const items = (inspection.body.items as Array<{ id: string }> | undefined) ?? [];
    return { tokens: {}, pathValues: { routeId: [routeId], requestId: items.map((item) => item.id), subPath: ['fuzz', 'a/b/c'] } };
  },
};
