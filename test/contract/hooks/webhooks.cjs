/**
 * dredd hooks for contracts/openapi/webhooks.yaml: every documented response is made real.
 *
 * Each transaction gets its own fixtures in its before hook (a fresh route, captures on it), so
 * the order of transactions does not matter. JSON and problem+json bodies are validated against
 * their schemas. Notes on the unusual ones:
 * - GET /inspect/{routeId} is documented with two media types; the `text/html` transaction asks
 *   for the page, the others send `Accept: application/json`.
 * - HEAD is captured like GET but not listed in the document: dredd 14 cannot send HEAD requests.
 * - The event stream never ends on its own: the hook captures one request and then deletes the
 *   route shortly after the stream opened, which ends the stream (documented behaviour), so dredd
 *   receives a complete `text/event-stream` answer with one real event.
 */
const hooks = require('hooks');
const http2 = require('node:http2');
const { contract, keyOf, asyncHook, SERVER_URL } = require('../support.cjs');

const doc = contract('webhooks');
const UNKNOWN = '6f1c0a8e-2d4b-4c3e-9f5a-7b8c9d0e1f2a';
const MALFORMED = 'not-a-uuid';

async function call(method, path, { body, headers = {} } = {}) {
  const response = await fetch(`${SERVER_URL}${path}`, { method, headers, body });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) };
}

async function newRoute() {
  const created = await call('POST', '/routes');
  if (created.status !== 201) throw new Error(`creating a route answered ${created.status}: ${created.text}`);
  return created.json().routeId;
}

/** A route with one capture on it; answers both ids. */
async function captured(contentType = 'application/json', body = '{"event":"push"}') {
  const routeId = await newRoute();
  const answer = await call('POST', `/${routeId}/github?delivery=1`, { body, headers: { 'content-type': contentType } });
  if (answer.status !== 200) throw new Error(`capturing answered ${answer.status}: ${answer.text}`);
  return { routeId, requestId: answer.json().requestId };
}

function setPath(transaction, path) {
  transaction.fullPath = path;
  transaction.request.uri = path;
}

function setHeader(transaction, name, value) {
  const headers = transaction.request.headers;
  for (const key of Object.keys(headers)) if (key.toLowerCase() === name.toLowerCase()) delete headers[key];
  if (value !== undefined) headers[name] = value;
}

function setBody(transaction, body, contentType) {
  transaction.request.body = body;
  setHeader(transaction, 'Content-Length', undefined);
  setHeader(transaction, 'Content-Type', contentType);
}

const isHtml = (transaction) => / > text\/html$/.test(transaction.name);
const acceptJson = (transaction) => setHeader(transaction, 'Accept', 'application/json');

/** Any documented capture response: `/{routeId}` and `/{routeId}/{subPath}`, every method. */
async function planCapture(transaction, method, path, status) {
  const suffix = path === '/{routeId}/{subPath}' ? '/github' : '';
  const routeId = status === '404' ? UNKNOWN : await newRoute();
  setPath(transaction, `/${routeId}${suffix}?source=dredd`);
  if (['POST', 'PUT', 'PATCH'].includes(method)) {
    setBody(transaction, '{"event":"push"}', 'application/json');
  } else {
    setBody(transaction, '', undefined);
  }
}

/**
 * Uses up this address's route allowance (webhooks.env.json: 100 per 2 s window) so the next
 * creation is refused. A window about to end (Retry-After 1) is waited out and used up again, so
 * dredd's own request lands in a spent window; the after hook then waits the window out.
 */
async function exhaustRouteAllowance() {
  for (let attempt = 0; attempt < 3; attempt++) {
    let refused;
    // 20 creations at a time: one by one, a loaded machine took over a second for the 100, so the
    // 2 s window was always about to end when it was used up.
    for (let i = 0; i < 50 && !refused; i++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => call('POST', '/routes')));
      for (const answer of answers) {
        if (answer.status === 429) refused ??= answer;
        else if (answer.status !== 201) throw new Error(`creating a route answered ${answer.status}: ${answer.text}`);
      }
    }
    if (!refused) throw new Error('no 429 after 1000 routes: is WEBHOOK_ROUTE_LIMIT set by webhooks.env.json?');
    const retryAfter = Number(refused.headers.get('retry-after'));
    if (retryAfter >= 2) return;
    await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
  }
  throw new Error('the route window kept ending while it was being used up');
}

const RATE_LIMITED = new Set(['POST /routes 429', 'GET /inspect 429']);

/** WEBHOOK_READS_PER_ADDRESS in webhooks.env.json: pages one address may have in flight. */
const READS_PER_ADDRESS = 2;
/** The HTTP/2 session holding this address's page reads for the transaction in progress. */
let unreadSession;

/**
 * Holds every page read this address may have in flight: READS_PER_ADDRESS pages of a route with a
 * 40 KiB capture, asked for over HTTP/2 with a flow-control window of 0, so none is ever read. The
 * after hook closes the session, which gives the reads back.
 */
async function holdPageReads() {
  const { routeId } = await captured('application/json', JSON.stringify({ pad: 'p'.repeat(40 * 1024) }));
  unreadSession = http2.connect(SERVER_URL, { settings: { initialWindowSize: 0 } });
  unreadSession.on('error', () => undefined);
  const statuses = await Promise.all(
    Array.from(
      { length: READS_PER_ADDRESS },
      () =>
        new Promise((resolve) => {
          const stream = unreadSession.request({ ':path': `/inspect/${routeId}`, accept: 'application/json' });
          stream.on('error', () => resolve(0));
          stream.once('response', (headers) => resolve(headers[':status']));
        }),
    ),
  );
  if (statuses.some((status) => status !== 200)) throw new Error(`holding page reads answered ${statuses.join(', ')}`);
  return routeId;
}

const PLANS = {
  'POST /routes 429': () => exhaustRouteAllowance(),
  'GET /inspect 429': () => exhaustRouteAllowance(),
  'POST /routes 201': (t) =>
    setBody(
      t,
      JSON.stringify({
        ttlSeconds: 3600,
        response: { status: 202, headers: { 'x-hook': 'accepted' }, body: '{"received":true}', delayMs: 0 },
        verify: { scheme: 'github', secret: "It's a Secret to Everybody" },
      }),
      'application/json',
    ),
  'POST /routes 400': (t) => setBody(t, JSON.stringify({ ttlSeconds: 0, colour: 'red' }), 'application/json'),
  'GET /inspect 302': () => {},

  'GET /inspect/{routeId} 200': async (t) => {
    const { routeId } = await captured();
    setPath(t, `/inspect/${routeId}?limit=50&q=push&method=POST`);
    if (isHtml(t)) {
      setHeader(t, 'Accept', 'text/html');
      delete t.expected.body; // the page itself; its content is checked by the browser test
    } else {
      acceptJson(t);
    }
  },
  'GET /inspect/{routeId} 400': (t) => {
    acceptJson(t);
    setPath(t, `/inspect/${MALFORMED}`);
  },
  'GET /inspect/{routeId} 429': async (t) => {
    acceptJson(t);
    setPath(t, `/inspect/${await holdPageReads()}`);
  },
  'GET /inspect/{routeId} 404': (t) => {
    if (isHtml(t)) {
      setHeader(t, 'Accept', 'text/html');
      delete t.expected.body;
    } else {
      acceptJson(t);
    }
    setPath(t, `/inspect/${UNKNOWN}`);
  },
  'DELETE /inspect/{routeId} 204': async (t) => setPath(t, `/inspect/${(await captured()).routeId}`),
  'DELETE /inspect/{routeId} 400': (t) => setPath(t, `/inspect/${MALFORMED}`),
  'DELETE /inspect/{routeId} 404': (t) => setPath(t, `/inspect/${UNKNOWN}`),

  'GET /inspect/{routeId}/requests/{requestId} 200': async (t) => {
    const { routeId, requestId } = await captured();
    setPath(t, `/inspect/${routeId}/requests/${requestId}`);
  },
  'GET /inspect/{routeId}/requests/{requestId} 400': (t) => setPath(t, `/inspect/${UNKNOWN}/requests/${MALFORMED}`),
  'GET /inspect/{routeId}/requests/{requestId} 404': async (t) => setPath(t, `/inspect/${await newRoute()}/requests/${UNKNOWN}`),
  'DELETE /inspect/{routeId}/requests/{requestId} 204': async (t) => {
    const { routeId, requestId } = await captured();
    setPath(t, `/inspect/${routeId}/requests/${requestId}`);
  },
  'DELETE /inspect/{routeId}/requests/{requestId} 400': (t) => setPath(t, `/inspect/${MALFORMED}/requests/${UNKNOWN}`),
  'DELETE /inspect/{routeId}/requests/{requestId} 404': async (t) => setPath(t, `/inspect/${await newRoute()}/requests/${UNKNOWN}`),

  'GET /inspect/{routeId}/requests/{requestId}/raw 200': async (t) => {
    const { routeId, requestId } = await captured('application/octet-stream', 'hello');
    setPath(t, `/inspect/${routeId}/requests/${requestId}/raw?inline=0`);
    t.expected.headers['Content-Disposition'] = `attachment; filename="${requestId}"`;
  },

  'GET /inspect/{routeId}/export.har 200': async (t) => {
    const { routeId } = await captured();
    setPath(t, `/inspect/${routeId}/export.har?limit=50&q=push&method=POST`);
    t.expected.headers['Content-Disposition'] = `attachment; filename="${routeId}.har"`;
    delete t.expected.body; // one real entry; the schema still applies
  },
  'GET /inspect/{routeId}/export.har 400': (t) => setPath(t, `/inspect/${UNKNOWN}/export.har?limit=0`),
  'GET /inspect/{routeId}/export.har 404': (t) => setPath(t, `/inspect/${UNKNOWN}/export.har`),
  'GET /inspect/{routeId}/export.har 429': async (t) => setPath(t, `/inspect/${await holdPageReads()}/export.har`),
  'GET /inspect/{routeId}/requests/{requestId}/har 200': async (t) => {
    const { routeId, requestId } = await captured();
    setPath(t, `/inspect/${routeId}/requests/${requestId}/har`);
    t.expected.headers['Content-Disposition'] = `attachment; filename="${requestId}.har"`;
    delete t.expected.body;
  },
  'GET /inspect/{routeId}/requests/{requestId}/har 400': (t) => setPath(t, `/inspect/${UNKNOWN}/requests/${MALFORMED}/har`),
  'GET /inspect/{routeId}/requests/{requestId}/har 404': async (t) => setPath(t, `/inspect/${await newRoute()}/requests/${UNKNOWN}/har`),
  'GET /inspect/{routeId}/requests/{requestId}/curl 200': async (t) => {
    const { routeId, requestId } = await captured();
    setPath(t, `/inspect/${routeId}/requests/${requestId}/curl?url=${encodeURIComponent('http://localhost:3000/hook')}`);
    delete t.expected.body; // the command names this capture's headers
  },
  'GET /inspect/{routeId}/requests/{requestId}/curl 400': async (t) => {
    const { routeId, requestId } = await captured();
    setPath(t, `/inspect/${routeId}/requests/${requestId}/curl?url=ftp%3A%2F%2Fexample`);
  },
  'GET /inspect/{routeId}/requests/{requestId}/curl 404': async (t) => setPath(t, `/inspect/${await newRoute()}/requests/${UNKNOWN}/curl`),
  'GET /inspect/{routeId}/requests/{requestId}/raw 400': (t) => setPath(t, `/inspect/${UNKNOWN}/requests/${MALFORMED}/raw`),
  'GET /inspect/{routeId}/requests/{requestId}/raw 404': (t) => setPath(t, `/inspect/${UNKNOWN}/requests/${UNKNOWN}/raw`),

  'GET /inspect/{routeId}/stream 200': async (t) => {
    const routeId = await newRoute();
    setPath(t, `/inspect/${routeId}/stream`);
    delete t.expected.body; // one real event whose ids differ from the example's
    // Once dredd's request is open: one capture (an event on the stream), then the route's
    // deletion, which ends the stream so dredd sees a complete answer.
    setTimeout(() => {
      call('POST', `/${routeId}`, { body: '{"via":"dredd"}', headers: { 'content-type': 'application/json' } })
        .then(() => new Promise((resolve) => setTimeout(resolve, 200)))
        .then(() => call('DELETE', `/inspect/${routeId}`))
        .catch(() => undefined);
    }, 500);
  },
  'GET /inspect/{routeId}/stream 404': (t) => setPath(t, `/inspect/${UNKNOWN}/stream`),
};

hooks.beforeEach(
  asyncHook(async (transaction) => {
    const key = keyOf(transaction);
    const [method, path, status] = key.split(' ');
    if (path === '/{routeId}' || path === '/{routeId}/{subPath}') {
      await planCapture(transaction, method, path, status);
    } else {
      const plan = PLANS[key];
      if (!plan) throw new Error(`no plan for ${key}: add one to test/contract/hooks/webhooks.cjs`);
      await plan(transaction);
    }
    doc.expectSchema(transaction);
    // Text answers (the page, raw bytes, the event stream) have no JSON body to validate.
    const type = String(transaction.expected.headers['Content-Type'] || transaction.expected.headers['content-type'] || '');
    if (!/json/.test(type)) delete transaction.expected.bodySchema;
  }),
);

// After a rate-limited transaction the window is waited out, so later fixtures can create routes;
// held page reads are given back by closing their session.
hooks.afterEach(
  asyncHook(async (transaction) => {
    if (RATE_LIMITED.has(keyOf(transaction))) await new Promise((resolve) => setTimeout(resolve, 2100));
    if (unreadSession) {
      const session = unreadSession;
      unreadSession = undefined;
      const closed = new Promise((resolve) => session.once('close', resolve));
      session.destroy();
      await closed;
    }
  }),
);
