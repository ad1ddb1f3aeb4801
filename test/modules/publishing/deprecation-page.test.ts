import { startServer, type TestServer } from '../../support/app.js';

/**
 * The `Link: </docs/publishing.md>; rel="deprecation"` target (issue 29 item 10): a browser following
 * it reads a rendered page; a client asking for anything else keeps the markdown.
 */
let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server?.close();
});

test('a browser gets the documentation as an HTML page with no script', async () => {
  const response = await fetch(`${server.url}/docs/publishing.md`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(response.headers.get('content-security-policy')).toMatch(/^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+';/);
  expect(response.headers.get('vary')).toBe('Accept');
  const page = await response.text();
  expect(page).toMatch(/<title>Article Publishing API \(\/v1, deprecated\) and \/graphql<\/title>/);
  expect(page).toMatch(/<h1>Article Publishing API \(<code>\/v1<\/code>, deprecated\) and <code>\/graphql<\/code><\/h1>/);
  // The role table and the state diagram, rendered; the header example in the text stays text.
  expect(page).toContain('<table>');
  expect(page).toContain('<pre><code>');
  expect(page).toContain('<code>Link: &lt;/docs/publishing.md&gt;; rel=&quot;deprecation&quot;</code>');
  expect(page).not.toMatch(/<script/i);
});

test('a client that does not ask for HTML still gets the markdown', async () => {
  const response = await fetch(`${server.url}/docs/publishing.md`);
  expect(response.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
  expect(await response.text()).toMatch(/^# Article Publishing API/);
});
