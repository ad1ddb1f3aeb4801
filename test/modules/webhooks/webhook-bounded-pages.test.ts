import { startServer, type TestServer } from '../../support/app.js';
import { createRoute, rawRequest } from './support.js';

const MiB = 1024 * 1024;
const PAGE_BYTES = 256 * 1024;

let server: TestServer | undefined;
beforeAll(async () => {
  server = await startServer({ WEBHOOK_MAX_BODY: String(MiB), WEBHOOK_PAGE_BYTES: String(PAGE_BYTES), WEBHOOK_BATCH_MS: '1' });
});
afterAll(() => server?.close());

async function capture(url: string, body: Buffer, contentType = 'application/octet-stream'): Promise<void> {
  const answer = await rawRequest(url, 'POST', [['Content-Type', contentType]], body);
  expect(answer.status).toBe(200);
}

async function page(routeId: string, query: string): Promise<{ bytes: number; body: { items: Array<Record<string, unknown>>; next: string | null } }> {
  const response = await fetch(`${server!.url}/inspect/${routeId}${query}`, { headers: { accept: 'application/json' } });
  expect(response.status).toBe(200);
  const text = await response.text();
  return { bytes: Buffer.byteLength(text), body: JSON.parse(text) };
}

describe('inspection pages are bounded in bytes', () => {
  test('a page of 20 captures of 1 MiB leaves every body out, keeps size and links, and stays under the bound', async () => {
    const { routeId, url } = await createRoute(server!);
    const bodies = Array.from({ length: 20 }, (_, index) => Buffer.alloc(MiB, index));
    for (const body of bodies) await capture(url, body);

    const { bytes, body } = await page(routeId, '?limit=500');
    expect(bytes).toBeLessThanOrEqual(PAGE_BYTES);
    expect(body.items).toHaveLength(20);
    expect(body.next).toBeNull();
    for (const item of body.items) {
      expect(item).toMatchObject({ size: MiB, truncated: false, bodyOmitted: true, bodyBase64: '', body: null, json: null });
      expect((item.links as { raw: string }).raw).toBe(`/inspect/${routeId}/requests/${String(item.id)}/raw`);
    }
    // The newest capture's bytes are one link away, intact.
    const raw = await rawRequest(`${server!.url}${(body.items[0]!.links as { raw: string }).raw}`, 'GET');
    expect(raw.body.equals(bodies[19]!)).toBe(true);
  });

  test('bodies small enough to be listed end the page early at the byte bound; the cursor walks every capture once, newest first', async () => {
    const { routeId, url } = await createRoute(server!);
    // 20 KiB of quotes as a JSON string: 40 KiB stored (under the inline bound), ~175 KiB as a list item.
    const count = 12;
    for (let index = 0; index < count; index++) await capture(url, Buffer.from(JSON.stringify(`${index}:${'"'.repeat(20 * 1024)}`)), 'application/json');

    const seen: string[] = [];
    let query = '?limit=500';
    let pages = 0;
    for (;;) {
      const { bytes, body } = await page(routeId, query);
      pages++;
      expect(bytes).toBeLessThanOrEqual(PAGE_BYTES);
      expect(body.items.length).toBeGreaterThan(0);
      for (const item of body.items) {
        expect(item.bodyOmitted).toBe(false);
        seen.push(String(item.json).split(':')[0]!);
      }
      if (!body.next) break;
      query = `?limit=500&before=${body.next}`;
    }
    expect(pages).toBeGreaterThan(1);
    expect(seen).toEqual(Array.from({ length: count }, (_, index) => String(count - 1 - index)));
  });

  test('a capture left out of a list is complete when fetched on its own', async () => {
    const { routeId, url } = await createRoute(server!);
    await capture(url, Buffer.alloc(200 * 1024, 7));
    const { body } = await page(routeId, '');
    const id = String(body.items[0]!.id);
    const one = await server!.request('GET', `/inspect/${routeId}/requests/${id}`);
    expect(one.body).toMatchObject({ bodyOmitted: false, size: 200 * 1024 });
    expect(Buffer.from(one.body.bodyBase64, 'base64').equals(Buffer.alloc(200 * 1024, 7))).toBe(true);
  });
});
