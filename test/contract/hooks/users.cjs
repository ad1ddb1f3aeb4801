/**
 * dredd hooks for contracts/openapi/users.yaml: every documented response is made real.
 *
 * The runner gives us an empty database and SIGNIN_MAX_FAILURES=3. beforeAll creates the fixtures
 * the document's examples name (alice, whose example sign-in must succeed) plus a plain user, through
 * the first-run bootstrap (no admin yet, and dredd is on loopback). The first admin is signed in (the
 * first sign-in on an empty database creates it) before the first transaction that needs one: the
 * sign-in transactions up to `POST /api/auth 403`, which shows a stranger refused by a server without
 * an admin, run before it (dredd keeps the document's order). Each transaction is
 * then shaped by its key `METHOD /path status` in PLANS; fixtures a transaction consumes (a user to
 * delete, a name to throttle) are made in its own before hook, so the order of transactions does not
 * matter. Every JSON response body is validated against its schema, not just the example's keys.
 */
const hooks = require('hooks');
const { contract, api, keyOf, rewrite, asyncHook } = require('../support.cjs');

const doc = contract('users');
const ADMIN = { name: 'contract-admin', password: 'contract-admin-password' };
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const state = { admin: undefined, plain: undefined, serial: 0, setupError: undefined };

async function signIn(name, password) {
  const response = await api('POST', '/api/auth', { body: { name, password } });
  if (response.status !== 200) throw new Error(`sign-in of ${name} answered ${response.status}: ${JSON.stringify(response.body)}`);
  return { id: response.body.user.id, token: response.body.accessToken };
}

async function createUser(name, password, isAdmin = false) {
  const response = await api('POST', '/api/users', { token: state.admin?.token, body: { name, password, isAdmin } });
  if (response.status !== 200) throw new Error(`creating ${name} answered ${response.status}: ${JSON.stringify(response.body)}`);
  return signIn(name, password);
}

const unique = (prefix) => `${prefix}-${++state.serial}`;
/** A JSON body just over the users API's 3 MiB body limit. */
const OVERSIZED = JSON.stringify({ name: 'x'.repeat(3 * 1024 * 1024 + 1) });

/** How each documented response is provoked. The default (no plan) sends the document's example. */
const PLANS = {
  'GET /api 200': () => {},

  'POST /api/auth 200': () => {}, // the example signs in alice, created in beforeAll
  'POST /api/auth 400': (t) => rewrite(t, { body: { name: 'alice' } }),
  'POST /api/auth 401': (t) => rewrite(t, { body: { name: 'alice', password: 'not-alices-password' } }),
  // No admin exists yet, and the request says a proxy forwards it for another machine: not local, no setup code.
  'POST /api/auth 403': (t) => {
    rewrite(t, { body: { name: unique('stranger'), password: 'stranger-password' } });
    t.request.headers['X-Forwarded-For'] = '203.0.113.9';
  },
  'POST /api/auth 413': (t) => rewrite(t, { body: OVERSIZED }),
  'POST /api/auth 429': async (t) => {
    const name = unique('throttled');
    for (let i = 0; i < 3; i += 1) {
      const failure = await api('POST', '/api/auth', { body: { name, password: 'wrong-password' } });
      if (failure.status !== 401) throw new Error(`expected 401 while exhausting the limit, got ${failure.status}`);
    }
    rewrite(t, { body: { name, password: 'wrong-password' } });
  },

  'GET /api/users 200': (t) => rewrite(t, { path: '/api/users?limit=1', token: state.admin.token }),
  'GET /api/users 400': (t) => rewrite(t, { path: '/api/users?after=not-a-cursor', token: state.admin.token }),
  'GET /api/users 401': (t) => rewrite(t, { dropAuth: true }),
  'GET /api/users 403': (t) => rewrite(t, { token: state.plain.token }),

  'POST /api/users 200': (t) => rewrite(t, { token: state.admin.token }), // the example creates bob
  'POST /api/users 400': (t) => rewrite(t, { token: state.admin.token, body: { name: '', password: 'short', isAdmin: 'no' } }),
  'POST /api/users 401': (t) => rewrite(t, { dropAuth: true, body: { name: unique('anonymous'), password: 'long-enough', isAdmin: false } }),
  'POST /api/users 403': (t) => rewrite(t, { token: state.plain.token, body: { name: unique('by-plain'), password: 'long-enough', isAdmin: false } }),
  'POST /api/users 413': (t) => rewrite(t, { token: state.admin.token, body: OVERSIZED }),
  'POST /api/users 409': (t) => rewrite(t, { token: state.admin.token, body: { name: 'alice', password: 'long-enough', isAdmin: false } }),

  'GET /api/users/{id} 200': (t) => rewrite(t, { path: `/api/users/${state.plain.id}`, token: state.plain.token }),
  'GET /api/users/{id} 401': (t) => rewrite(t, { path: `/api/users/${state.plain.id}`, dropAuth: true }),
  // Another plain user's id is as invisible as an unknown one: both 404.
  'GET /api/users/{id} 404': (t) => rewrite(t, { path: `/api/users/${state.admin.id}`, token: state.plain.token }),

  'PUT /api/users/{id} 200': (t) => rewrite(t, { path: `/api/users/${state.plain.id}`, token: state.plain.token }),
  'PUT /api/users/{id} 400': (t) => rewrite(t, { path: `/api/users/${state.plain.id}`, token: state.plain.token, body: { settings: { language: 'en' } } }),
  'PUT /api/users/{id} 401': (t) => rewrite(t, { path: `/api/users/${state.plain.id}`, dropAuth: true }),
  'PUT /api/users/{id} 403': (t) => rewrite(t, { path: `/api/users/${state.plain.id}`, token: state.plain.token, body: { isAdmin: true } }),
  'PUT /api/users/{id} 413': (t) => rewrite(t, { path: `/api/users/${state.plain.id}`, token: state.plain.token, body: OVERSIZED }),
  'PUT /api/users/{id} 404': (t) => rewrite(t, { path: `/api/users/${UNKNOWN_ID}`, token: state.admin.token }),
  // The only admin demoting themself: the last admin stays (a taken name would also answer 409).
  'PUT /api/users/{id} 409': (t) => rewrite(t, { path: `/api/users/${state.admin.id}`, token: state.admin.token, body: { isAdmin: false } }),

  'DELETE /api/users/{id} 200': async (t) => {
    const doomed = await createUser(unique('doomed'), 'doomed-password');
    rewrite(t, { path: `/api/users/${doomed.id}`, token: state.admin.token });
  },
  'DELETE /api/users/{id} 401': (t) => rewrite(t, { path: `/api/users/${state.plain.id}`, dropAuth: true }),
  'DELETE /api/users/{id} 404': (t) => rewrite(t, { path: `/api/users/not-a-uuid`, token: state.admin.token }),
  'DELETE /api/users/{id} 409': (t) => rewrite(t, { path: `/api/users/${state.admin.id}`, token: state.admin.token }),
};

/** Transactions that run while no admin exists (see the header). */
const BEFORE_ADMIN = new Set(['GET /api 200', 'POST /api/auth 200', 'POST /api/auth 400', 'POST /api/auth 401', 'POST /api/auth 403']);

hooks.beforeAll((_transactions, done) => {
  (async () => {
    await createUser('alice', 'correct horse battery');
    state.plain = await createUser('plain', 'plain-password');
  })().then(
    () => done(),
    (error) => {
      // Every transaction fails with this reason rather than with confusing follow-up errors.
      state.setupError = error;
      done();
    },
  );
});

hooks.beforeEach(
  asyncHook(async (transaction) => {
    if (state.setupError) throw state.setupError;
    const key = keyOf(transaction);
    const plan = PLANS[key];
    if (!plan) throw new Error(`no plan for ${key}: add one to test/contract/hooks/users.cjs`);
    if (!state.admin && !BEFORE_ADMIN.has(key)) state.admin = await signIn(ADMIN.name, ADMIN.password);
    await plan(transaction);
    doc.expectSchema(transaction);
  }),
);
