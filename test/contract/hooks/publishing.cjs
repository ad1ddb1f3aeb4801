/**
 * dredd hooks for contracts/openapi/publishing.yaml: every documented response is made real.
 *
 * The runner starts the server on an empty database with the superuser of publishing.env.json.
 * beforeAll signs it in and creates the cast (ada, the writer the document's examples sign in as;
 * another writer, an editor, a reader) and a topic. Each transaction is then shaped by its key
 * `METHOD /path status` in PLANS; articles a transaction consumes (to publish, delete) are written in
 * its own before hook, so the order of transactions does not matter. Every JSON and problem+json
 * body is validated against its schema, and the runner checks the required Deprecation/Link headers.
 */
const hooks = require('hooks');
const { contract, api, keyOf, rewrite, asyncHook } = require('../support.cjs');

const doc = contract('publishing');
const ROOT = { email: 'contract-root@example.com', password: 'contract-root-password' };
const UNKNOWN_ID = 'ffffffffffffffffffffffff';
const BAD_TOKEN = 'not-a-token';
const state = { tokens: {}, ids: {}, topic: undefined, serial: 0, setupError: undefined };

async function signIn(email, password) {
  const response = await api('POST', '/v1/writers/login', { body: { email, password } });
  if (response.status !== 200) throw new Error(`sign-in of ${email} answered ${response.status}: ${JSON.stringify(response.body)}`);
  return { id: response.body.user._id, token: response.body.accessToken };
}

async function createUser(who, email, password, role) {
  const response = await api('POST', '/v1/writers', { token: state.tokens.superuser, body: { email, password, name: who, role } });
  if (response.status !== 201) throw new Error(`creating ${who} answered ${response.status}: ${JSON.stringify(response.body)}`);
  const signedIn = await signIn(email, password);
  state.tokens[who] = signedIn.token;
  state.ids[who] = signedIn.id;
}

const unique = (prefix) => `${prefix}-${++state.serial}`;
const articleBody = () => ({ title: unique('Contract article'), text: 'Written by the contract test.', tags: ['contract'], topic: state.topic });

/** A draft by ada (the writer); published too when asked. */
async function article({ published = false, deleted = false } = {}) {
  const created = await api('POST', '/v1/articles', { token: state.tokens.writer, body: articleBody() });
  if (created.status !== 201) throw new Error(`writing an article answered ${created.status}: ${JSON.stringify(created.body)}`);
  const id = created.body._id;
  if (published) await api('POST', `/v1/articles/${id}/publish`, { token: state.tokens.editor });
  if (deleted) await api('DELETE', `/v1/articles/${id}`, { token: state.tokens.writer });
  return id;
}

/** The `next` cursor of a list's first page (the list must have a second page). */
async function nextCursor(path) {
  const first = await api('GET', path);
  if (first.status !== 200 || typeof first.body.next !== 'string')
    throw new Error(`${path} answered ${first.status} without a next cursor: ${JSON.stringify(first.body)}`);
  return encodeURIComponent(first.body.next);
}

/** How each documented response is provoked. */
const PLANS = {
  // The second page of a filtered list, reached by the first page's `next` cursor.
  'GET /v1/articles 200': async (t) => {
    await article({ published: true });
    await article({ published: true });
    rewrite(t, { path: `/v1/articles?limit=1&tag=contract&q=contract&after=${await nextCursor('/v1/articles?limit=1&tag=contract&q=contract')}` });
  },
  'GET /v1/articles 400': (t) => rewrite(t, { path: '/v1/articles?offset=10001' }),
  'GET /v1/articles 401': (t) => rewrite(t, { path: '/v1/articles?status=draft', dropAuth: true }),
  'GET /v1/articles 403': (t) => rewrite(t, { path: '/v1/articles?status=draft', token: state.tokens.reader }),

  'POST /v1/articles 201': (t) => rewrite(t, { token: state.tokens.writer, body: articleBody() }),
  'POST /v1/articles 400': (t) => rewrite(t, { token: state.tokens.writer, body: { title: '', text: 'x', tags: [1] } }),
  'POST /v1/articles 401': (t) => rewrite(t, { dropAuth: true, body: articleBody() }),
  'POST /v1/articles 403': (t) => rewrite(t, { token: state.tokens.reader, body: articleBody() }),

  'GET /v1/articles/{id} 200': async (t) => rewrite(t, { path: `/v1/articles/${await article({ published: true })}`, dropAuth: true }),
  'GET /v1/articles/{id} 401': async (t) => rewrite(t, { path: `/v1/articles/${await article({ published: true })}`, token: BAD_TOKEN }),
  // A draft is as invisible to the public as an unknown id.
  'GET /v1/articles/{id} 404': async (t) => rewrite(t, { path: `/v1/articles/${await article()}`, dropAuth: true }),

  'PUT /v1/articles/{id} 200': async (t) => rewrite(t, { path: `/v1/articles/${await article()}`, token: state.tokens.writer, body: articleBody() }),
  'PUT /v1/articles/{id} 400': async (t) => rewrite(t, { path: `/v1/articles/${await article()}`, token: state.tokens.writer, body: { title: 'x' } }),
  'PUT /v1/articles/{id} 401': async (t) => rewrite(t, { path: `/v1/articles/${await article()}`, dropAuth: true, body: articleBody() }),
  'PUT /v1/articles/{id} 403': async (t) =>
    rewrite(t, { path: `/v1/articles/${await article({ published: true })}`, token: state.tokens.otherWriter, body: articleBody() }),
  'PUT /v1/articles/{id} 404': (t) => rewrite(t, { path: `/v1/articles/${UNKNOWN_ID}`, token: state.tokens.superuser, body: articleBody() }),

  'DELETE /v1/articles/{id} 204': async (t) => rewrite(t, { path: `/v1/articles/${await article()}`, token: state.tokens.writer }),
  'DELETE /v1/articles/{id} 401': async (t) => rewrite(t, { path: `/v1/articles/${await article()}`, dropAuth: true }),
  'DELETE /v1/articles/{id} 403': async (t) => rewrite(t, { path: `/v1/articles/${await article({ published: true })}`, token: state.tokens.editor }),
  'DELETE /v1/articles/{id} 404': (t) => rewrite(t, { path: '/v1/articles/not-an-id', token: state.tokens.superuser }),

  'POST /v1/articles/{id}/publish 200': async (t) => rewrite(t, { path: `/v1/articles/${await article()}/publish`, token: state.tokens.editor }),
  'POST /v1/articles/{id}/publish 401': async (t) => rewrite(t, { path: `/v1/articles/${await article()}/publish`, dropAuth: true }),
  'POST /v1/articles/{id}/publish 403': async (t) => rewrite(t, { path: `/v1/articles/${await article()}/publish`, token: state.tokens.writer }),
  'POST /v1/articles/{id}/publish 404': (t) => rewrite(t, { path: `/v1/articles/${UNKNOWN_ID}/publish`, token: state.tokens.superuser }),
  'POST /v1/articles/{id}/publish 409': async (t) =>
    rewrite(t, { path: `/v1/articles/${await article({ deleted: true })}/publish`, token: state.tokens.superuser }),

  'GET /v1/writers 200': async (t) => rewrite(t, { path: `/v1/writers?limit=1&after=${await nextCursor('/v1/writers?limit=1')}`, dropAuth: true }),
  'GET /v1/writers 400': (t) => rewrite(t, { path: '/v1/writers?after=not-a-cursor' }),
  'GET /v1/writers 401': (t) => rewrite(t, { path: '/v1/writers', token: BAD_TOKEN }),

  'POST /v1/writers 201': (t) =>
    rewrite(t, {
      token: state.tokens.superuser,
      body: {
        email: `${unique('new')}@example.com`,
        password: 'new-writer-password',
        name: 'New Writer',
        profileImage: { url: 'https://cdn.example.com/new.png' },
      },
    }),
  'POST /v1/writers 400': (t) => rewrite(t, { token: state.tokens.superuser, body: { email: 'not-an-email', password: 'short', name: '' } }),
  'POST /v1/writers 401': (t) => rewrite(t, { dropAuth: true }),
  'POST /v1/writers 403': (t) => rewrite(t, { token: state.tokens.editor }),
  'POST /v1/writers 409': (t) => rewrite(t, { token: state.tokens.superuser }), // the example's email is ada's

  'POST /v1/writers/login 200': () => {}, // the example signs in ada, created in beforeAll
  'POST /v1/writers/login 400': (t) => rewrite(t, { body: { email: 'ada@example.com' } }),
  'POST /v1/writers/login 401': (t) => rewrite(t, { body: { email: 'ada@example.com', password: 'not-adas-password' } }),
  'POST /v1/writers/login 429': async (t) => {
    // The contract runner sets SIGNIN_MAX_FAILURES=3: three failures, and the fourth attempt is refused.
    const email = `${unique('throttled')}@example.com`;
    for (let i = 0; i < 3; i += 1) {
      const failure = await api('POST', '/v1/writers/login', { body: { email, password: 'wrong-password' } });
      if (failure.status !== 401) throw new Error(`expected 401 while exhausting the limit, got ${failure.status}`);
    }
    rewrite(t, { body: { email, password: 'wrong-password' } });
  },

  'GET /v1/writers/{id} 200': (t) => rewrite(t, { path: `/v1/writers/${state.ids.writer}`, token: state.tokens.writer }),
  'GET /v1/writers/{id} 401': (t) => rewrite(t, { path: `/v1/writers/${state.ids.writer}`, token: BAD_TOKEN }),
  // A reader is listed to superusers and themself only; to the public it is as unknown as any id.
  'GET /v1/writers/{id} 404': (t) => rewrite(t, { path: `/v1/writers/${state.ids.reader}`, dropAuth: true }),

  'GET /v1/topics 200': async (t) => {
    await api('POST', '/v1/topics', { token: state.tokens.superuser, body: { title: unique('Topic') } });
    rewrite(t, { path: `/v1/topics?limit=1&after=${await nextCursor('/v1/topics?limit=1')}` });
  },
  'GET /v1/topics 400': (t) => rewrite(t, { path: '/v1/topics?offset=10001' }),
  'GET /v1/topics 401': (t) => rewrite(t, { path: '/v1/topics', token: BAD_TOKEN }),

  'POST /v1/topics 201': (t) => rewrite(t, { token: state.tokens.superuser, body: { title: unique('Topic') } }),
  'POST /v1/topics 400': (t) => rewrite(t, { token: state.tokens.superuser, body: { title: '' } }),
  'POST /v1/topics 401': (t) => rewrite(t, { dropAuth: true }),
  'POST /v1/topics 403': (t) => rewrite(t, { token: state.tokens.editor }),
  'POST /v1/topics 409': (t) => rewrite(t, { token: state.tokens.superuser, body: { title: 'FIXTURES' } }),
};

hooks.beforeAll((_transactions, done) => {
  (async () => {
    const root = await signIn(ROOT.email, ROOT.password);
    state.tokens.superuser = root.token;
    state.ids.superuser = root.id;
    await createUser('writer', 'ada@example.com', 'correct horse battery', 'writer');
    await createUser('otherWriter', 'other@example.com', 'other-writer-password', 'writer');
    await createUser('editor', 'editor@example.com', 'editor-password', 'editor');
    await createUser('reader', 'reader@example.com', 'reader-password', 'reader');
    const topic = await api('POST', '/v1/topics', { token: state.tokens.superuser, body: { title: 'Fixtures' } });
    if (topic.status !== 201) throw new Error(`creating the topic answered ${topic.status}`);
    state.topic = topic.body._id;
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
    if (!plan) throw new Error(`no plan for ${key}: add one to test/contract/hooks/publishing.cjs`);
    await plan(transaction);
    doc.expectSchema(transaction);
  }),
);
