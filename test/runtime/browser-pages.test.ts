import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { startServer, type TestServer } from '../support/app.js';
import { CHROMIUM, consoleOf, haveChromium, launchChromium } from '../support/browser.js';
import { budget } from '../support/budget.js';
import { login, SUPERUSER } from '../modules/publishing/support.js';

/** The version the server reports: package.json's (moved by contracts releases). */
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/**
 * The browser entry points (docs/operations.md): `/`, `/docs` and the GraphQL explorer at `/graphql`,
 * each opened in Chromium with its console watched (a CSP violation is a console error), and the same
 * URLs as API clients see them.
 */
if (!haveChromium) console.warn(`SKIPPED the browser entry point tests: ${CHROMIUM} is missing (CI installs it with apt-get install chromium)`);
const browserTest = haveChromium ? test : test.skip;

let server: TestServer;
let browser: Browser | undefined;
beforeAll(async () => {
  server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
  if (haveChromium) browser = await launchChromium();
}, budget(20_000));
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** A page whose console is watched from before it loads; closed after `use` whatever happens. */
async function withPage(use: (page: Page, console: string[]) => Promise<void>): Promise<void> {
  const page = await browser!.newPage();
  try {
    await use(page, consoleOf(page));
  } finally {
    await page.close();
  }
}

describe('/', () => {
  test('API clients get the entry points as JSON', async () => {
    const response = await fetch(`${server.url}/`, { headers: { accept: 'application/json' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('vary')).toBe('Accept');
    const body = (await response.json()) as { links: Array<{ href: string }> };
    expect(body.links.map((link) => link.href)).toEqual(['/docs', '/graphql', '/inspect', '/openapi', '/healthz', '/readyz', '/metrics']);
  });

  browserTest(
    'a browser gets a page linking the API reference, the explorer, the inspector, health and metrics, with nothing in the console',
    () =>
      withPage(async (page, console) => {
        const response = await page.goto(`${server.url}/`);
        expect(response?.headers()['content-security-policy']).not.toContain('unsafe-inline');
        const hrefs = await page.locator('dl a').evaluateAll((links) => links.map((link) => link.getAttribute('href')));
        expect(hrefs).toEqual(['/docs', '/graphql', '/inspect', '/openapi', '/healthz', '/readyz', '/metrics']);
        // The style is inline and allowed by its hash: applied, not blocked.
        expect(await page.evaluate('getComputedStyle(document.body).maxWidth')).not.toBe('none');
        expect(console).toEqual([]);
      }),
    budget(10_000),
  );
});

test('/metrics, linked from /, says what runs: cfs_build_info with the version, the Node.js version and the store', async () => {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const store = process.env.DATABASE_URL ? 'postgres' : 'pglite';
  expect(text).toContain(`cfs_build_info{version="${version}",node_version="${process.versions.node}",database="${store}"} 1`);
});

describe('/docs', () => {
  browserTest(
    'opens on a current API with no CSP violation, and "Try it out" sends only the parameters the user typed',
    () =>
      withPage(async (page, console) => {
        const response = await page.goto(`${server.url}/docs`);
        expect(response?.headers()['content-security-policy']).not.toContain('unsafe-inline');
        await page.locator('.opblock').first().waitFor();
        const selected = (await page.locator('select#select option:checked').textContent()) ?? '';
        expect(selected).not.toMatch(/deprecated|publishing/i);

        // The deprecated publishing API is still listed; its article list has examples and defaults for every filter.
        await page
          .locator('select#select')
          .selectOption({ label: (await page.locator('select#select option', { hasText: 'publishing' }).textContent()) ?? '' });
        const list = page.locator('#operations-articles-listArticles');
        await list.locator('.opblock-summary').click();
        await list.locator('.try-out__btn').click();
        const values = await list
          .locator('.parameters input, .parameters select')
          .evaluateAll((fields) => fields.map((field) => (field as unknown as { value: string }).value));
        expect(values.filter((value) => value !== '')).toEqual([]);
        const sent = page.waitForRequest((request) => request.url().includes('/v1/articles'));
        await list.locator('.execute').click();
        expect(new URL((await sent).url()).search).toBe('');
        await list.locator('.live-responses-table .response-col_status').first().waitFor();
        expect(console).toEqual([]);
      }),
    budget(20_000),
  );
});

describe('/graphql', () => {
  test('API clients keep GraphQL over HTTP: a GET without a browser Accept is a GraphQL request, not the page', async () => {
    const response = await fetch(`${server.url}/graphql?query=${encodeURIComponent('{ topics { items { _id } } }')}`, {
      headers: { accept: 'application/json' },
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toMatch(/json/);
  });

  browserTest(
    'a browser gets GraphiQL, served from this server, which runs a query with the token the user types, with nothing in the console',
    () =>
      withPage(async (page, console) => {
        const token = (await login(server, SUPERUSER.email, SUPERUSER.password)).body.accessToken as string;
        const requests: string[] = [];
        page.on('request', (request) => request.isNavigationRequest() || requests.push(request.url()));
        const response = await page.goto(`${server.url}/graphql`);
        expect(response?.headers()['content-type']).toMatch(/^text\/html/);
        expect(response?.headers()['content-security-policy']).not.toMatch(/unsafe-inline|unsafe-eval/);
        await page.locator('.graphiql-container').waitFor();
        // The schema comes from the SDL: nothing was sent to /graphql before the user runs a query.
        expect(requests.filter((url) => new URL(url).pathname === '/graphql')).toEqual([]);
        expect(requests.every((url) => url.startsWith(server.url))).toBe(true);

        await page.locator('.graphiql-editor-tool .graphiql-editor').last().click();
        await page.keyboard.type(`{"Authorization": "Bearer ${token}"`);
        const answered = page.waitForResponse((reply) => new URL(reply.url()).pathname === '/graphql' && reply.request().method() === 'POST');
        await page.locator('.graphiql-execute-button').click();
        expect((await answered).status()).toBe(200);
        await page.locator('.graphiql-response').getByText('"topics"').waitFor();
        expect(console).toEqual([]);
      }),
    budget(20_000),
  );
});
