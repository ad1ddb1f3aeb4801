import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import { promisify } from 'node:util';
import harValidator from 'har-validator';
import { startServer, type TestServer } from '../../support/app.js';
import { createRoute, openEventStream, rawRequest } from './support.js';

const run = promisify(execFile);
const DELAY_MS = 400;
const DELAY_CONCURRENCY = 2;

let server: TestServer | undefined;
beforeAll(async () => {
  server = await startServer({ WEBHOOK_BATCH_MS: '1', WEBHOOK_DELAY_CONCURRENCY: String(DELAY_CONCURRENCY) });
});
afterAll(() => server?.close());

/** The fields of a captured request the tests read. */
interface CapturedItem {
  id: string;
  method: string;
  path: string;
  headers: string[][];
  signature: unknown;
  multipart: unknown;
}

interface HarEntryView {
  request: { postData?: { text: string }; comment?: string };
}

async function inspect(routeId: string, query = '') {
  const response = await server!.request('GET', `/inspect/${routeId}${query}`, { headers: { accept: 'application/json' } });
  expect(response.status).toBe(200);
  return response.body as { items: CapturedItem[]; next: string | null };
}

const BINARY = Buffer.from([0, 1, 2, 39, 37, 92, 10, 13, 128, 255, 34, 36, 96]);
const HEADERS: Array<[string, string]> = [
  ['Content-Type', 'application/octet-stream'],
  ['X-Tag', 'one'],
  ['x-tag', "two 'quoted' $HOME `cmd`"],
  ['X-Empty', ''],
];

describe('export', () => {
  test('a cURL command replayed against a second route captures the same bytes, header lines and query', async () => {
    const source = await createRoute(server!);
    const target = await createRoute(server!);
    await rawRequest(`${source.url}/deep/path?a=1&a=2&b=%20x`, 'PUT', HEADERS, BINARY);
    const [captured] = (await inspect(source.routeId)).items;
    const curl = await server!.request('GET', `/inspect/${source.routeId}/requests/${captured!.id}/curl?url=${encodeURIComponent(`${target.url}/replayed`)}`);
    expect(curl.status).toBe(200);
    expect(curl.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    await run('sh', ['-c', curl.text], { timeout: 30_000 });

    const [replayed] = (await inspect(target.routeId)).items;
    expect(replayed).toMatchObject({
      method: 'PUT',
      path: `/${target.routeId}/replayed/deep/path`,
      query: 'a=1&a=2&b=%20x',
      bodyBase64: BINARY.toString('base64'),
    });
    // Host, Content-Length and hop-by-hop lines (Connection) are the new connection's own.
    const names = (lines: string[][]) => lines.filter(([name]) => !/^(host|content-length|connection)$/i.test(name!));
    expect(names(replayed!.headers)).toEqual(names(captured!.headers));
  });

  test('a capture exports as a valid HAR 1.2 document whose entry keeps the binary body, header lines and query', async () => {
    const { routeId, url } = await createRoute(server!);
    await rawRequest(`${url}/hook?x=1&x=2`, 'POST', HEADERS, BINARY);
    const [captured] = (await inspect(routeId)).items;
    const response = await server!.request('GET', `/inspect/${routeId}/requests/${captured!.id}/har`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-disposition')).toBe(`attachment; filename="${captured!.id}.har"`);
    await expect(harValidator.har(response.body)).resolves.toEqual(response.body);
    const [entry] = response.body.log.entries;
    expect(entry.request.method).toBe('POST');
    expect(entry.request.url).toBe(`${server!.url}/${routeId}/hook?x=1&x=2`);
    expect(entry.request.headers).toEqual(captured!.headers.map(([name, value]: string[]) => ({ name, value })));
    expect(entry.request.queryString).toEqual([
      { name: 'x', value: '1' },
      { name: 'x', value: '2' },
    ]);
    expect(entry.request.postData).toEqual({ mimeType: 'application/octet-stream', text: BINARY.toString('base64'), encoding: 'base64' });
  });

  test("a route's export is one bounded page, newest first: large bodies are left out and linked", async () => {
    const { routeId, url } = await createRoute(server!);
    await rawRequest(url, 'POST', [['Content-Type', 'text/plain']], 'small one');
    await rawRequest(url, 'POST', [['Content-Type', 'application/octet-stream']], Buffer.alloc(300 * 1024, 1));
    await rawRequest(url, 'POST', [['Content-Type', 'text/plain']], 'small two');
    const response = await server!.request('GET', `/inspect/${routeId}/export.har?limit=2`);
    expect(response.status).toBe(200);
    await expect(harValidator.har(response.body)).resolves.toEqual(response.body);
    const entries = response.body.log.entries as HarEntryView[];
    expect(entries.map((entry) => entry.request.postData?.text ?? null)).toEqual(['small two', null]);
    expect(entries[1]!.request.comment).toMatch(/body of 307200 bytes left out.*\/raw$/);
    expect(response.headers.get('link')).toMatch(new RegExp(`^</inspect/${routeId}/export.har\\?limit=2&before=\\d+>; rel="next"$`));
    const next = await server!.request('GET', response.headers.get('link')!.slice(1).split('>')[0]!);
    expect((next.body.log.entries as HarEntryView[]).map((entry) => entry.request.postData?.text)).toEqual(['small one']);
  });
});

describe('signature verification', () => {
  const secret = 'gh-secret-for-test';
  const sign = (body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

  test('each capture on a verifying route carries the check; the secret is never shown', async () => {
    const created = await server!.request('POST', '/routes', { body: { verify: { scheme: 'github', secret } } });
    expect(created.status).toBe(201);
    expect(created.text).not.toContain(secret);
    const { routeId, url } = created.body;
    await rawRequest(url, 'POST', [['X-Hub-Signature-256', sign('{"a":1}')]], '{"a":1}');
    await rawRequest(url, 'POST', [['X-Hub-Signature-256', sign('{"a":1}')]], '{"a":2}');
    await rawRequest(url, 'POST', [], '{"a":3}');
    const page = await server!.request('GET', `/inspect/${routeId}`, { headers: { accept: 'application/json' } });
    expect((page.body.items as CapturedItem[]).map((item) => item.signature)).toEqual([
      { scheme: 'github', valid: false, reason: 'no_signature_header' },
      { scheme: 'github', valid: false, reason: 'no_signature_matches' },
      { scheme: 'github', valid: true, reason: null },
    ]);
    for (const path of [`/inspect/${routeId}`, `/inspect/${routeId}/export.har`]) {
      expect(await (await fetch(`${server!.url}${path}`)).text()).not.toContain(secret);
    }
    expect(page.text).not.toContain(secret);
  });

  test('a route without verify shows signature null; bad verify settings are refused naming the field', async () => {
    const { routeId, url } = await createRoute(server!);
    await rawRequest(url, 'POST', [], 'x');
    expect((await inspect(routeId)).items[0]!.signature).toBeNull();
    for (const [verify, field] of [
      [{ scheme: 'github', secret: 's', header: 'X-Other' }, 'verify.header'],
      [{ scheme: 'standard-webhooks', secret: 'not base64!' }, 'verify.secret'],
      [{ scheme: 'rot13', secret: 's' }, 'verify.scheme'],
    ] as const) {
      const refused = await server!.request('POST', '/routes', { body: { verify } });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.body.errors)).toContain(field.split('.')[1]);
    }
  });
});

describe('response delay', () => {
  test('delayed answers wait; beyond the per-route concurrency senders get 429 at once and nothing is recorded', async () => {
    const { routeId, url } = (await server!.request('POST', '/routes', { body: { response: { delayMs: DELAY_MS } } })).body;
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: DELAY_CONCURRENCY + 1 }, (_, index) =>
        rawRequest(url, 'POST', [], `n${index}`).then((answer) => ({
          status: answer.status,
          ms: performance.now() - started,
          retryAfter: answer.headers['retry-after'],
        })),
      ),
    );
    const ok = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(ok).toHaveLength(DELAY_CONCURRENCY);
    expect(refused).toHaveLength(1);
    for (const answer of ok) expect(answer.ms).toBeGreaterThanOrEqual(DELAY_MS - 5);
    expect(refused[0]!.ms).toBeLessThan(Math.min(...ok.map((answer) => answer.ms)));
    expect(refused[0]!.retryAfter).toBe('1');
    expect((await inspect(routeId)).items).toHaveLength(DELAY_CONCURRENCY);
    // The slots are given back: the next sender is served.
    expect((await rawRequest(url, 'POST', [], 'after')).status).toBe(200);
  });

  test('a delay above 30 s is refused', async () => {
    const refused = await server!.request('POST', '/routes', { body: { response: { delayMs: 30_001 } } });
    expect(refused.status).toBe(400);
  });
});

describe('search', () => {
  test('q matches path, query, header values and body text; method filters; the cursor walks the matches newest first', async () => {
    const { routeId, url } = await createRoute(server!);
    await rawRequest(`${url}/orders`, 'POST', [['Content-Type', 'application/json']], '{"event":"Invoice.Paid"}');
    await rawRequest(`${url}/users?kind=invoice`, 'GET', []);
    await rawRequest(`${url}/other`, 'PUT', [['X-Event', 'INVOICE.created']], 'nothing');
    await rawRequest(`${url}/other`, 'POST', [], Buffer.concat([Buffer.from([0xff, 0x00]), Buffer.from('invoice in binary')]));
    await rawRequest(`${url}/none`, 'POST', [], 'no match here');
    const target = (item: CapturedItem) => `${item.method} ${item.path.slice(routeId.length + 2)}`;

    expect((await inspect(routeId, '?q=invoice')).items.map(target)).toEqual(['POST other', 'PUT other', 'GET users', 'POST orders']);
    expect((await inspect(routeId, '?q=invoice&method=post')).items.map(target)).toEqual(['POST other', 'POST orders']);
    expect((await inspect(routeId, '?q=100%25')).items).toEqual([]);
    const first = await inspect(routeId, '?q=invoice&limit=3');
    expect(first.items.map(target)).toEqual(['POST other', 'PUT other', 'GET users']);
    const second = await inspect(routeId, `?q=invoice&limit=3&before=${first.next}`);
    expect(second.items.map(target)).toEqual(['POST orders']);
    expect(second.next).toBeNull();
  });
});

describe('multipart', () => {
  test('a multipart/form-data capture lists its parts: name, file name, type, size and text when small UTF-8', async () => {
    const { routeId, url } = await createRoute(server!);
    const form = new FormData();
    form.append('title', 'héllo');
    form.append('avatar', new Blob([BINARY], { type: 'image/png' }), 'me.png');
    form.append('notes', new Blob(['plain notes'], { type: 'text/plain' }), 'notes.txt');
    const answer = await fetch(url, { method: 'POST', body: form });
    expect(answer.status).toBe(200);
    const [captured] = (await inspect(routeId)).items;
    expect(captured!.multipart).toEqual([
      { name: 'title', filename: null, contentType: 'text/plain', size: Buffer.byteLength('héllo'), text: 'héllo' },
      { name: 'avatar', filename: 'me.png', contentType: 'image/png', size: BINARY.length, text: null },
      { name: 'notes', filename: 'notes.txt', contentType: 'text/plain', size: 11, text: 'plain notes' },
    ]);
    const json = await rawRequest(url, 'POST', [['Content-Type', 'application/json']], '{}');
    expect(json.status).toBe(200);
    expect((await inspect(routeId)).items[0]!.multipart).toBeNull();
  });
});

describe('event stream resumption', () => {
  test('a stream opens with its starting id, and resuming with Last-Event-ID replays every capture since, beyond 100', async () => {
    const { routeId, url } = await createRoute(server!);
    const first = await new Promise<string>((resolve, reject) => {
      const request = http.get(`${server!.url}/inspect/${routeId}/stream`, { agent: false }, (response) => {
        response.setEncoding('utf8');
        let text = '';
        response.on('data', (chunk: string) => {
          text += chunk;
          if (text.includes('\n\n')) {
            request.destroy();
            resolve(text.slice(0, text.indexOf('\n\n')));
          }
        });
      });
      request.on('error', reject);
    });
    const start = /^id: (\d+)$/m.exec(first)?.[1];
    expect(start).toBeDefined();

    const count = 130;
    await Promise.all(Array.from({ length: count }, (_, index) => rawRequest(url, 'POST', [], `n${index}`)));
    const stream = await openEventStream(`${server!.url}/inspect/${routeId}/stream`, { 'last-event-id': start! });
    const bodies = new Set<string>();
    for (let index = 0; index < count; index++) bodies.add(JSON.parse((await stream.next()).data).body as string);
    stream.close();
    expect(bodies.size).toBe(count);
  });
});
