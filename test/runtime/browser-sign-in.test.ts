import type { Browser, Page } from 'playwright-core';
import { startServer, type TestServer } from '../support/app.js';
import { CHROMIUM, consoleOf, haveChromium, launchChromium } from '../support/browser.js';
import { budget } from '../support/budget.js';
import { SUPERUSER } from '../modules/publishing/support.js';

/**
 * The browser pages sign in by themselves (no token fetched with curl): the form above the API
 * reference (`/docs`) and GraphiQL (`/graphql`) posts the credentials, and the page's next call carries
 * the token. At 1280 px, GraphiQL's first view shows its sign-in form and hint whole and no error.
 */
if (!haveChromium) console.warn(`SKIPPED the browser sign-in tests: ${CHROMIUM} is missing (CI installs it with apt-get install chromium)`);
const browserTest = haveChromium ? test : test.skip;

const ADMIN = { name: 'page-admin', password: 'page-admin-password' };

let server: TestServer;
let browser: Browser | undefined;
beforeAll(async () => {
  server = await startServer({
    ADMIN_USERNAME: ADMIN.name,
    ADMIN_PASSWORD: ADMIN.password,
    SUPERUSER_EMAIL: SUPERUSER.email,
    SUPERUSER_PASSWORD: SUPERUSER.password,
  });
  if (haveChromium) browser = await launchChromium();
}, budget(20_000));
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function withPage(use: (page: Page, console: string[]) => Promise<void>): Promise<void> {
  const page = await browser!.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(budget(30_000)); // Swagger UI's 1.4 MB bundle on a loaded machine
  try {
    await use(page, consoleOf(page));
  } finally {
    await page.close();
  }
}

/** Fills the page's sign-in form and waits for its verdict. */
async function signIn(page: Page, as: 'user' | 'writer', login: string, password: string): Promise<string> {
  const form = page.locator('form#sign-in');
  await form.locator('select[name=as]').selectOption(as);
  await form.locator('input[name=login]').fill(login);
  await form.locator('input[name=password]').fill(password);
  await form.locator('button[type=submit]').click();
  await form.locator('.sign-in-status', { hasText: /^(Signed in|Sign-in failed)/ }).waitFor();
  return (await form.locator('.sign-in-status').textContent()) ?? '';
}

browserTest(
  '/docs: a wrong password is said in the form; the right one signs in, and "Try it out" on GET /api/users sends the token and gets 200',
  () =>
    withPage(async (page, console) => {
      await page.goto(`${server.url}/docs`);
      await page.locator('#operations-users-listUsers').waitFor();
      expect(await signIn(page, 'user', ADMIN.name, 'not-the-password')).toMatch(/^Sign-in failed \(401\)/);
      expect(await signIn(page, 'user', ADMIN.name, ADMIN.password)).toBe(`Signed in as ${ADMIN.name}: this page sends Authorization: Bearer <token>.`);

      const operation = page.locator('#operations-users-listUsers');
      await operation.locator('.opblock-summary').click();
      await operation.locator('.try-out__btn').click();
      const answered = page.waitForResponse((reply) => new URL(reply.url()).pathname === '/api/users' && reply.request().method() === 'GET');
      await operation.locator('.execute').click();
      const reply = await answered;
      expect(reply.request().headers().authorization).toMatch(/^Bearer ey/);
      expect(reply.status()).toBe(200);
      await operation.locator('.live-responses-table').getByText(ADMIN.name).first().waitFor();
      expect(console.filter((line) => !/401 \(Unauthorized\)/.test(line))).toEqual([]);
    }),
  budget(90_000),
);

browserTest(
  '/graphql: the first view shows the sign-in form and a whole hint, no error; a writer signs in and a query runs with the token',
  () =>
    withPage(async (page, console) => {
      const graphqlCalls: string[] = [];
      page.on('request', (request) => new URL(request.url()).pathname === '/graphql' && !request.isNavigationRequest() && graphqlCalls.push(request.method()));
      await page.goto(`${server.url}/graphql`);
      await page.locator('.graphiql-container').waitFor();
      expect(graphqlCalls).toEqual([]);
      expect((await page.locator('.graphiql-response').textContent()) ?? '').not.toMatch(/error|unauthori[sz]ed|401/i);
      // The hint, the first lines of the query editor, is not cut off by the editor's edge.
      const editor = await page.locator('.graphiql-query-editor').boundingBox();
      const lines = page.locator('.graphiql-query-editor .CodeMirror-line');
      expect(await lines.first().textContent()).toMatch(/^# Sign in above/);
      for (const index of [0, 1]) {
        const box = await lines.nth(index).locator('span').first().boundingBox();
        expect(editor && box && box.x + box.width <= editor.x + editor.width).toBe(true);
      }
      await expect(page.locator('form#sign-in .sign-in-status').isVisible()).resolves.toBe(true);

      expect(await signIn(page, 'writer', SUPERUSER.email, SUPERUSER.password)).toMatch(/^Signed in as /);
      const answered = page.waitForResponse((reply) => new URL(reply.url()).pathname === '/graphql' && reply.request().method() === 'POST');
      await page.locator('.graphiql-execute-button').click();
      const reply = await answered;
      expect(reply.request().headers().authorization).toMatch(/^Bearer ey/);
      expect(reply.status()).toBe(200);
      await page.locator('.graphiql-response').getByText('"topics"').waitFor();
      expect(console).toEqual([]);
    }),
  budget(90_000),
);
