import { startServer, type TestServer } from '../support/app.js';
import { createRoute, rawRequest } from '../modules/webhooks/support.js';

let server: TestServer | undefined;
beforeAll(async () => {
  server = await startServer({ WEBHOOK_BATCH_MS: '1' });
});
afterAll(() => server?.close());

/** Captures one body with `contentType` and answers the URL of its raw bytes. */
async function rawUrlOf(contentType: string, body: string): Promise<string> {
  const { routeId, url } = await createRoute(server!);
  const answer = await rawRequest(url, 'POST', [['Content-Type', contentType]], body);
  expect(answer.status).toBe(200);
  const requestId = JSON.parse(answer.body.toString()).requestId as string;
  return `${server!.url}/inspect/${routeId}/requests/${requestId}/raw`;
}

describe('raw captured bodies are downloads, never pages of this origin (issue 21 item 7)', () => {
  test.each([
    ['text/html', '<script>alert(1)</script>'],
    ['image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'],
    ['application/xhtml+xml', '<html xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script></html>'],
    ['text/xml', '<?xml-stylesheet href="x.xsl"?><a/>'],
    ['application/xml', '<a/>'],
    ['application/pdf', '%PDF-1.4'],
    ['text/plain', 'hello'],
    ['image/png', 'PNG'],
  ])('a %s body is sent as an attachment, sandboxed and not sniffed', async (contentType, body) => {
    const raw = await rawRequest(await rawUrlOf(contentType, body), 'GET');
    expect(raw.status).toBe(200);
    expect(raw.headers['content-disposition']).toMatch(/^attachment; filename="[0-9a-f-]{36}"$/);
    expect(raw.headers['content-security-policy']).toBe("default-src 'none'; sandbox");
    expect(raw.headers['x-content-type-options']).toBe('nosniff');
    expect(raw.body.toString()).toBe(body);
  });

  test.each(['text/html', 'image/svg+xml', 'application/xhtml+xml', 'text/xml', 'application/xml', 'text/html; charset=utf-8'])(
    'inline=1 does not make a %s body inline',
    async (contentType) => {
      const raw = await rawRequest(`${await rawUrlOf(contentType, '<b>x</b>')}?inline=1`, 'GET');
      expect(raw.headers['content-disposition']).toMatch(/^attachment;/);
    },
  );

  test.each(['image/png', 'image/jpeg', 'text/plain; charset=utf-8', 'application/json'])('inline=1 shows a %s body inline', async (contentType) => {
    const raw = await rawRequest(`${await rawUrlOf(contentType, '{}')}?inline=1`, 'GET');
    expect(raw.headers['content-disposition']).toBe('inline');
    expect(raw.headers['content-security-policy']).toBe("default-src 'none'; sandbox");
  });
});
