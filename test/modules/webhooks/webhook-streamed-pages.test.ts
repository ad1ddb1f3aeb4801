import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { once } from 'node:events';
import { startServer, type TestServer } from '../../support/app.js';
import { createRoute, rawRequest } from './support.js';

const PAGE_BYTES = 1024 * 1024;
const READS_PER_ADDRESS = 2;

let server: TestServer | undefined;
beforeAll(async () => {
  server = await startServer({
    WEBHOOK_PAGE_BYTES: String(PAGE_BYTES),
    WEBHOOK_BATCH_MS: '1',
    WEBHOOK_READS_PER_ADDRESS: String(READS_PER_ADDRESS),
    HTTP2_STALL_TIMEOUT_MS: '60000',
  });
});
afterAll(() => server?.close());

/** A GET over HTTP/1.1 from `from`, keeping the body as it came: its bytes and how many chunks it arrived in. */
function readWhole(
  path: string,
  from = '127.0.0.1',
  method = 'GET',
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string; chunks: number }> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${server!.url}${path}`, { method, agent: false, localAddress: from, headers: { accept: 'application/json' } }, (response) => {
      const parts: Buffer[] = [];
      response.on('data', (chunk: Buffer) => parts.push(chunk));
      response.once('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(parts).toString('utf8'), chunks: parts.length }),
      );
      response.once('error', reject);
    });
    request.once('error', reject);
    request.end();
  });
}

/** Stores `count` JSON captures of `bytes` characters of `fill` each (and their index) on a new route; answers the route. */
async function routeWith(count: number, bytes: number, fill = 'p'): Promise<{ routeId: string; url: string }> {
  const route = await createRoute(server!);
  for (let index = 0; index < count; index++) {
    const body = JSON.stringify({ index, pad: fill.repeat(bytes) });
    expect((await rawRequest(`${route.url}/hook?i=${index}`, 'POST', [['Content-Type', 'application/json']], body)).status).toBe(200);
  }
  return route;
}

/** Unread HTTP/2 page requests from `from` (window 0): resolves with each one's status once all have their head. */
async function unreadPages(from: string, path: string, count: number): Promise<{ statuses: number[]; session: http2.ClientHttp2Session }> {
  const session = http2.connect(server!.url, {
    settings: { initialWindowSize: 0 },
    createConnection: () => net.connect({ host: '127.0.0.1', port: server!.port, localAddress: from }),
  });
  session.on('error', () => undefined);
  await once(session, 'remoteSettings');
  const statuses = await Promise.all(
    Array.from({ length: count }, async () => {
      const stream = session.request({ ':path': path, accept: 'application/json' });
      stream.on('error', () => undefined);
      const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
      return Number(headers[':status']);
    }),
  );
  return { statuses, session };
}

describe('inspection pages are produced as the client reads them', () => {
  test('a streamed page is byte for byte the JSON of the route and of each capture as served alone, and comes in several chunks', async () => {
    // ~67 KB of JSON per capture (estimated 61 KB): 10 of them are three chunks of the page.
    const { routeId } = await routeWith(12, 20 * 1024);
    const page = await readWhole(`/inspect/${routeId}?limit=10`);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(page.chunks).toBeGreaterThan(1);
    const parsed = JSON.parse(page.text) as { routeId: string; createdAt: string; expiresAt: string; items: Array<{ id: string }>; next: string | null };
    expect(parsed.items).toHaveLength(10);
    expect(parsed.next).not.toBeNull();
    // Built independently: the same route fields, then each capture's own answer, then the cursor.
    const alone = await Promise.all(parsed.items.map(async (item) => (await readWhole(`/inspect/${routeId}/requests/${item.id}`)).text));
    const expected = `{"routeId":${JSON.stringify(routeId)},"createdAt":${JSON.stringify(parsed.createdAt)},"expiresAt":${JSON.stringify(parsed.expiresAt)},"items":[${alone.join(',')}],"next":${JSON.stringify(parsed.next)}}`;
    expect(page.text).toBe(expected);
    // The cursor walks on to the two older captures and then ends.
    const older = JSON.parse((await readWhole(`/inspect/${routeId}?limit=10&before=${parsed.next}`)).text) as { items: unknown[]; next: string | null };
    expect(older.items).toHaveLength(2);
    expect(older.next).toBeNull();
  });

  test('pages cut on their exact JSON size stay within WEBHOOK_PAGE_BYTES and the cursor walks every capture once; the HAR export streams the same captures', async () => {
    // 30 K quotes: 60 KB stored (listed), estimated 181 KB but ~260 KB as JSON (escaped twice): the
    // estimate would let 5 into a 1 MiB page, the exact size cuts it earlier.
    const count = 10;
    const { routeId } = await routeWith(count, 30 * 1024, '"');
    const seen: number[] = [];
    let query = '?limit=500';
    for (;;) {
      const page = await readWhole(`/inspect/${routeId}${query}`);
      expect(Buffer.byteLength(page.text)).toBeLessThanOrEqual(PAGE_BYTES);
      const parsed = JSON.parse(page.text) as { items: Array<{ json: { index: number } }>; next: string | null };
      expect(page.text).toBe(JSON.stringify(parsed));
      expect(parsed.items.length).toBeGreaterThan(0);
      expect(parsed.items.length).toBeLessThan(5);
      seen.push(...parsed.items.map((item) => item.json.index));
      if (!parsed.next) break;
      query = `?limit=500&before=${parsed.next}`;
    }
    expect(seen).toEqual(Array.from({ length: count }, (_, index) => count - 1 - index));

    const har = await readWhole(`/inspect/${routeId}/export.har?limit=3`);
    expect(har.status).toBe(200);
    expect(har.headers.link).toMatch(/rel="next"/);
    const document = JSON.parse(har.text) as { log: { version: string; entries: unknown[] } };
    expect(document.log.version).toBe('1.2');
    expect(document.log.entries).toHaveLength(3);
    expect(har.text).toBe(JSON.stringify(document));
  });

  test('HEAD and ordinary reads give their slot back: many more reads than WEBHOOK_READS_PER_ADDRESS in a row are all served', async () => {
    const { routeId } = await routeWith(2, 1024);
    const head = await readWhole(`/inspect/${routeId}`, '127.0.0.7', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    for (let index = 0; index < READS_PER_ADDRESS * 3; index++) {
      const path = index % 2 === 0 ? `/inspect/${routeId}` : `/inspect/${routeId}/export.har`;
      expect((await readWhole(path, '127.0.0.7')).status).toBe(200);
    }
  });

  test("unread pages hold their address's slots: more answer 429 with Retry-After in problem details; another address is served; closing gives them back", async () => {
    const { routeId } = await routeWith(8, 40 * 1024);
    const { statuses, session } = await unreadPages('127.0.0.8', `/inspect/${routeId}?limit=500`, READS_PER_ADDRESS + 3);
    try {
      expect(statuses.filter((status) => status === 200)).toHaveLength(READS_PER_ADDRESS);
      expect(statuses.filter((status) => status === 429)).toHaveLength(3);
      const refused = await readWhole(`/inspect/${routeId}/export.har`, '127.0.0.8');
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(refused.text)).toMatchObject({ status: 429, title: 'Too Many Requests' });
      expect((await readWhole(`/inspect/${routeId}?limit=500`, '127.0.0.9')).status).toBe(200);
    } finally {
      const closed = once(session, 'close');
      session.destroy();
      await closed;
    }
    // The server sees the streams close a moment after the client does: asked again until served.
    let again = await readWhole(`/inspect/${routeId}?limit=500`, '127.0.0.8');
    for (let attempt = 0; again.status === 429 && attempt < 10; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, Number(again.headers['retry-after']) * 1000));
      again = await readWhole(`/inspect/${routeId}?limit=500`, '127.0.0.8');
    }
    expect(again.status).toBe(200);
  });
});
