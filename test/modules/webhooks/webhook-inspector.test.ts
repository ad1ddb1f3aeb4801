import { startServer, type TestServer } from '../../support/app.js';
import { createRoute, openEventStream, rawRequest } from './support.js';

const MAX_BODY = 4096;
const MAX_REQUESTS = 10;

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ WEBHOOK_MAX_BODY: String(MAX_BODY), WEBHOOK_MAX_REQUESTS: String(MAX_REQUESTS), WEBHOOK_BATCH_MS: '1' });
});
afterAll(() => server?.close());

async function inspect(routeId: string, query = '') {
  const response = await server.request('GET', `/inspect/${routeId}${query}`, { headers: { accept: 'application/json' } });
  expect(response.status).toBe(200);
  return response.body;
}

describe('routes', () => {
  test('creating a route answers 201 with its capture and inspection URLs and a 7-day expiry', async () => {
    const created = await server.request('POST', '/routes');
    expect(created.status).toBe(201);
    const { routeId, url, inspectUrl, createdAt, expiresAt } = created.body;
    expect(routeId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(url).toBe(`${server.url}/${routeId}`);
    expect(inspectUrl).toBe(`${server.url}/inspect/${routeId}`);
    expect(Date.parse(expiresAt) - Date.parse(createdAt)).toBe(7 * 24 * 3600 * 1000);
    expect(await inspect(routeId)).toEqual({ routeId, createdAt, expiresAt, items: [], next: null });
  });

  test('a lifetime above 30 days, an unknown property or a framing header is refused with problem details', async () => {
    for (const body of [
      { ttlSeconds: 31 * 24 * 3600 },
      { colour: 'red' },
      { response: { headers: { 'Content-Length': '3' } } },
      { response: { headers: { 'bad name': 'x' } } },
      { response: { status: 101 } },
    ]) {
      const refused = await server.request('POST', '/routes', { body });
      expect(refused.status).toBe(400);
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
      expect(refused.body).toMatchObject({ type: 'about:blank', title: 'Bad Request', status: 400 });
      expect(refused.body.errors.length).toBeGreaterThan(0);
    }
  });

  test('GET /inspect creates a route and redirects the browser to its page', async () => {
    const response = await fetch(`${server.url}/inspect`, { redirect: 'manual' });
    expect(response.status).toBe(302);
    const location = response.headers.get('location') ?? '';
    expect(location).toMatch(/^\/inspect\/[0-9a-f-]{36}$/);
    const routeId = location.split('/').pop() ?? '';
    expect((await inspect(routeId)).routeId).toBe(routeId);
  });
});

describe('capture', () => {
  test.each(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'PURGE'])(
    'a %s request is recorded and answered with the default acknowledgement',
    async (method) => {
      const { routeId } = await createRoute(server);
      const body = ['GET', 'HEAD', 'OPTIONS'].includes(method) ? undefined : `payload for ${method}`;
      const answer = await rawRequest(`${server.url}/${routeId}/hooks/${method.toLowerCase()}?m=${method}`, method, [['Content-Type', 'text/plain']], body);
      expect(answer.status).toBe(200);
      const { items } = await inspect(routeId);
      expect(items).toHaveLength(1);
      const [captured] = items;
      expect(captured).toMatchObject({
        routeId,
        method,
        path: `/${routeId}/hooks/${method.toLowerCase()}`,
        query: `m=${method}`,
        queryParams: { m: [method] },
        httpVersion: '1.1',
        remoteAddress: '127.0.0.1',
      });
      expect(captured.body).toBe(body ?? '');
      expect(captured.size).toBe(Buffer.byteLength(body ?? ''));
      if (method === 'HEAD') {
        expect(answer.body.length).toBe(0);
      } else {
        expect(JSON.parse(answer.body.toString())).toEqual({ ok: true, requestId: captured.id });
      }
    },
  );

  test('the capture endpoint answers through the contract for the documented methods', async () => {
    const { routeId } = await createRoute(server);
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      const answer = await server.request(method, `/${routeId}`, method === 'GET' || method === 'OPTIONS' ? {} : { body: { method } });
      expect(answer.body).toMatchObject({ ok: true });
    }
    expect((await inspect(routeId)).items.map((item: { method: string }) => item.method)).toEqual(['OPTIONS', 'DELETE', 'PATCH', 'PUT', 'POST', 'GET']);
  });

  test('every byte value from 0 to 255 round-trips through bodyBase64 and /raw', async () => {
    const { routeId } = await createRoute(server);
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, index) => index));
    expect((await rawRequest(`${server.url}/${routeId}`, 'POST', [['Content-Type', 'application/x-binary']], bytes)).status).toBe(200);
    const [captured] = (await inspect(routeId)).items;
    expect(Buffer.from(captured.bodyBase64, 'base64').equals(bytes)).toBe(true);
    expect(captured).toMatchObject({ body: null, json: null, form: null, size: 256, truncated: false, contentType: 'application/x-binary' });
    const raw = await rawRequest(`${server.url}/inspect/${routeId}/requests/${captured.id}/raw`, 'GET');
    expect(raw.status).toBe(200);
    expect(raw.headers['content-type']).toBe('application/x-binary');
    expect(raw.headers['content-security-policy']).toBe("default-src 'none'; sandbox");
    expect(raw.body.equals(bytes)).toBe(true);
  });

  test('repeated headers are kept in the order and letter case they were sent', async () => {
    const { routeId } = await createRoute(server);
    const sent: Array<[string, string]> = [
      ['X-Tag', 'one'],
      ['x-other', 'between'],
      ['X-TAG', 'two'],
      ['X-Tag', 'three'],
    ];
    await rawRequest(`${server.url}/${routeId}`, 'GET', sent);
    const [captured] = (await inspect(routeId)).items;
    const lines = captured.headers.filter(([name]: [string]) => /^x-(tag|other)$/i.test(name));
    expect(lines).toEqual(sent);
    expect(captured.headers[0][0]).toBe('Host');
  });

  test('quotes, backslashes, braces and commas in the path, query, headers and content type are stored as sent', async () => {
    // Each column travels inside a PostgreSQL array literal (one statement per batch): these are its metacharacters.
    const { routeId } = await createRoute(server);
    const awkward = `a"b\\c{d},e\\"f NULL`;
    const sent: Array<[string, string]> = [
      ['Content-Type', `text/plain; note="${awkward}"`],
      ['X-Awkward', awkward],
      ['X-Backslashes', '\\\\\\'],
    ];
    const target = `/${routeId}/p%22q%5Cr{s},t?x=%22%5C&y=a"b\\c`;
    expect((await rawRequest(`${server.url}${target}`, 'POST', sent, Buffer.from('\\x41"'))).status).toBe(200);
    const [captured] = (await inspect(routeId)).items;
    expect(captured.path).toBe(`/${routeId}/p%22q%5Cr{s},t`);
    expect(captured.query).toBe('x=%22%5C&y=a"b\\c');
    expect(captured.contentType).toBe(`text/plain; note="${awkward}"`);
    expect(captured.headers.filter(([name]: [string]) => name !== 'Host' && name !== 'Content-Length' && name !== 'Connection')).toEqual(sent);
    expect(Buffer.from(captured.bodyBase64, 'base64').toString()).toBe('\\x41"');
  });

  test('a body above WEBHOOK_MAX_BODY is stored cut at the limit, with its full size and truncated: true', async () => {
    const { routeId } = await createRoute(server);
    const body = Buffer.alloc(MAX_BODY * 3, 'a');
    expect((await rawRequest(`${server.url}/${routeId}`, 'POST', [['Content-Type', 'text/plain']], body)).status).toBe(200);
    const [captured] = (await inspect(routeId)).items;
    expect(captured).toMatchObject({ size: MAX_BODY * 3, truncated: true });
    expect(Buffer.from(captured.bodyBase64, 'base64').length).toBe(MAX_BODY);
    const raw = await rawRequest(`${server.url}/inspect/${routeId}/requests/${captured.id}/raw`, 'GET');
    expect(raw.body.length).toBe(MAX_BODY);
  });

  test('JSON and form bodies are also shown parsed', async () => {
    const { routeId } = await createRoute(server);
    await rawRequest(`${server.url}/${routeId}`, 'POST', [['Content-Type', 'application/json']], '{"event":"push","n":[1,2]}');
    await rawRequest(`${server.url}/${routeId}`, 'POST', [['Content-Type', 'application/x-www-form-urlencoded']], 'a=1&a=2&b=x+y&__proto__=p');
    const [form, json] = (await inspect(routeId)).items;
    expect(json).toMatchObject({ json: { event: 'push', n: [1, 2] }, form: null, contentType: 'application/json' });
    expect(Object.entries(form.form)).toEqual([
      ['a', ['1', '2']],
      ['b', ['x y']],
      ['__proto__', ['p']],
    ]);
    expect(form.json).toBeNull();
  });

  test('a route keeps at most WEBHOOK_MAX_REQUESTS captures, dropping the oldest first', async () => {
    const { routeId } = await createRoute(server);
    for (let index = 0; index < MAX_REQUESTS + 3; index++) {
      expect((await rawRequest(`${server.url}/${routeId}?n=${index}`, 'POST')).status).toBe(200);
    }
    const { items } = await inspect(routeId, `?limit=${MAX_REQUESTS + 5}`);
    expect(items.map((item: { query: string }) => item.query)).toEqual(Array.from({ length: MAX_REQUESTS }, (_, index) => `n=${MAX_REQUESTS + 2 - index}`));
  });

  test('concurrent captures are each acknowledged once stored, none lost', async () => {
    const { routeId } = await createRoute(server, {});
    const answers = await Promise.all(
      Array.from({ length: MAX_REQUESTS }, (_, index) => rawRequest(`${server.url}/${routeId}?n=${index}`, 'POST', [], `body ${index}`)),
    );
    const acknowledged = answers.map((answer) => JSON.parse(answer.body.toString()).requestId).sort();
    const stored = (await inspect(routeId, '?limit=100')).items.map((item: { id: string }) => item.id).sort();
    expect(stored).toEqual(acknowledged);
  });

  test('an unknown route answers 404 and records nothing', async () => {
    const unknown = '6f1c0a8e-2d4b-4c3e-9f5a-7b8c9d0e1f2a';
    const answer = await rawRequest(`${server.url}/${unknown}/x`, 'POST', [['Content-Type', 'text/plain']], 'hello');
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.body.toString())).toMatchObject({ status: 404, title: 'Not Found' });
    expect((await server.request('GET', `/inspect/${unknown}`, { headers: { accept: 'application/json' } })).status).toBe(404);
    const rows = await server.app.db.knex('webhook_requests').where({ route_id: unknown }).count<{ count: number }[]>({ count: '*' });
    expect(Number(rows[0]?.count)).toBe(0);
  });

  test('a route configured with a response answers senders with its status, headers and body', async () => {
    const { routeId } = await createRoute(server, {
      response: { status: 202, headers: { 'X-Hook': 'yes', 'Content-Type': 'application/xml' }, body: '<ok/>' },
    });
    const answer = await rawRequest(`${server.url}/${routeId}`, 'POST', [], 'x');
    expect(answer.status).toBe(202);
    expect(answer.headers['x-hook']).toBe('yes');
    expect(answer.headers['content-type']).toBe('application/xml');
    expect(answer.body.toString()).toBe('<ok/>');
    expect((await inspect(routeId)).items).toHaveLength(1);
  });
});

describe('inspection', () => {
  test('captures are listed newest first in pages joined by the next cursor', async () => {
    const { routeId } = await createRoute(server);
    for (let index = 0; index < 7; index++) await rawRequest(`${server.url}/${routeId}?n=${index}`, 'GET');
    const seen: string[] = [];
    let query = '?limit=3';
    const pages: number[] = [];
    for (;;) {
      const page = await inspect(routeId, query);
      pages.push(page.items.length);
      seen.push(...page.items.map((item: { query: string }) => item.query));
      if (!page.next) break;
      query = `?limit=3&before=${page.next}`;
    }
    expect(pages).toEqual([3, 3, 1]);
    expect(seen).toEqual(['n=6', 'n=5', 'n=4', 'n=3', 'n=2', 'n=1', 'n=0']);
  });

  test('one capture can be read and deleted; a deleted one is 404', async () => {
    const { routeId } = await createRoute(server);
    await rawRequest(`${server.url}/${routeId}`, 'PUT', [['Content-Type', 'application/json']], '[1]');
    const [captured] = (await inspect(routeId)).items;
    const one = await server.request('GET', `/inspect/${routeId}/requests/${captured.id}`);
    expect(one.body).toEqual(captured);
    expect((await server.request('DELETE', `/inspect/${routeId}/requests/${captured.id}`)).status).toBe(204);
    expect((await server.request('GET', `/inspect/${routeId}/requests/${captured.id}`)).status).toBe(404);
    expect((await server.request('DELETE', `/inspect/${routeId}/requests/${captured.id}`)).status).toBe(404);
  });

  test('a malformed route id or cursor is a 400 problem, never a 500', async () => {
    expect((await server.request('GET', '/inspect/not-a-uuid', { headers: { accept: 'application/json' } })).status).toBe(400);
    const { routeId } = await createRoute(server);
    expect((await server.request('GET', `/inspect/${routeId}?before=abc`, { headers: { accept: 'application/json' } })).status).toBe(400);
    expect((await server.request('GET', `/inspect/${routeId}/requests/nope`)).status).toBe(400);
    expect((await rawRequest(`${server.url}/inspect/%ZZ`, 'GET')).status).toBe(400);
    expect((await rawRequest(`${server.url}/inspect/${routeId}/requests/%ZZ`, 'GET')).status).toBe(400);
  });

  test('deleting a route stops capture at once and removes its captures', async () => {
    const { routeId } = await createRoute(server);
    await rawRequest(`${server.url}/${routeId}`, 'POST', [], 'before');
    expect((await server.request('DELETE', `/inspect/${routeId}`)).status).toBe(204);
    expect((await rawRequest(`${server.url}/${routeId}`, 'POST', [], 'after')).status).toBe(404);
    expect((await server.request('GET', `/inspect/${routeId}`, { headers: { accept: 'application/json' } })).status).toBe(404);
    expect((await server.request('DELETE', `/inspect/${routeId}`)).status).toBe(404);
  });

  test('an expired route records nothing, even while cached, and the sweeper deletes it with its captures', async () => {
    const { routeId } = await createRoute(server, { ttlSeconds: 3600 });
    await rawRequest(`${server.url}/${routeId}`, 'POST', [], 'kept until swept');
    await server.app.db
      .knex('webhook_routes')
      .where({ id: routeId })
      .update({ expires_at: new Date(Date.now() - 1000) });
    expect((await rawRequest(`${server.url}/${routeId}`, 'POST', [], 'too late')).status).toBe(404);
    expect((await server.request('GET', `/inspect/${routeId}`, { headers: { accept: 'application/json' } })).status).toBe(404);
    const { WebhookRepository } = await import('../../../src/store/repositories/webhook-repository.js');
    const { WebhookSweeper } = await import('../../../src/services/webhooks/sweeper.js');
    const swept = await new WebhookSweeper(new WebhookRepository(server.app.db.knex), 60_000).sweepOnce();
    expect(swept).toBeGreaterThanOrEqual(1);
    expect(await server.app.db.knex('webhook_routes').where({ id: routeId }).first()).toBeUndefined();
    expect(await server.app.db.knex('webhook_requests').where({ route_id: routeId }).first()).toBeUndefined();
  });
});

describe('live updates and the page', () => {
  test('the event stream delivers each new capture as one data event with the capture JSON', async () => {
    const { routeId } = await createRoute(server);
    const stream = await openEventStream(`${server.url}/inspect/${routeId}/stream`);
    try {
      expect(stream.status).toBe(200);
      expect(stream.contentType).toMatch(/^text\/event-stream/);
      await rawRequest(`${server.url}/${routeId}/live?x=1`, 'POST', [['Content-Type', 'application/json']], '{"live":true}');
      const event = await stream.next();
      const captured = JSON.parse(event.data);
      expect(captured).toMatchObject({ routeId, method: 'POST', path: `/${routeId}/live`, json: { live: true } });
      expect(captured).toEqual((await inspect(routeId)).items[0]);
    } finally {
      stream.close();
    }
  });

  test('a stream resumed with Last-Event-ID first replays what it missed', async () => {
    const { routeId } = await createRoute(server);
    const first = await openEventStream(`${server.url}/inspect/${routeId}/stream`);
    await rawRequest(`${server.url}/${routeId}?n=1`, 'GET');
    const seen = await first.next();
    first.close();
    await rawRequest(`${server.url}/${routeId}?n=2`, 'GET');
    const resumed = await openEventStream(`${server.url}/inspect/${routeId}/stream`, { 'last-event-id': seen.id ?? '' });
    try {
      expect(JSON.parse((await resumed.next()).data).query).toBe('n=2');
    } finally {
      resumed.close();
    }
  });

  test('the stream of an unknown route is a 404', async () => {
    const response = await rawRequest(`${server.url}/inspect/6f1c0a8e-2d4b-4c3e-9f5a-7b8c9d0e1f2a/stream`, 'GET');
    expect(response.status).toBe(404);
  });

  test('the HTML page has a strict Content-Security-Policy and no inline script or style', async () => {
    const { routeId } = await createRoute(server);
    const page = await server.request('GET', `/inspect/${routeId}`, { headers: { accept: 'text/html' }, unchecked: true });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(page.text).not.toMatch(/<script>|<style|\son\w+=|https?:\/\//);
    expect(page.text).toContain('<script src="/inspect-assets/inspector.js" defer></script>');
    const script = await fetch(`${server.url}/inspect-assets/inspector.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await script.text()).not.toContain('innerHTML =');
    const missing = await server.request('GET', '/inspect/6f1c0a8e-2d4b-4c3e-9f5a-7b8c9d0e1f2a', { headers: { accept: 'text/html' }, unchecked: true });
    expect(missing.status).toBe(404);
  });
});
