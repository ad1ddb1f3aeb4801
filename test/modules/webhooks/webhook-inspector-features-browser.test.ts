import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { startServer, type TestServer } from '../../support/app.js';
import { CHROMIUM, haveChromium, launchChromium } from '../../support/browser.js';
import { budget } from '../../support/budget.js';
import { rawRequest } from './support.js';

if (!haveChromium) console.warn(`SKIPPED the webhook inspector features browser test: ${CHROMIUM} is missing (CI installs it with apt-get install chromium)`);
const browserTest = haveChromium ? test : test.skip;

let server: TestServer | undefined;
let browser: Browser | undefined;
beforeAll(async () => {
  server = await startServer({ WEBHOOK_BATCH_MS: '1' });
  if (haveChromium) browser = await launchChromium();
}, budget(20_000));
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/**
 * Waits until the list shows exactly `count` captures. Locators, not `page.waitForFunction('…')`: a
 * string predicate is re-evaluated with `eval` on every poll after the first, which the page's CSP
 * (`script-src 'self'`) refuses, so it failed whenever the list was not ready at the first look.
 * The page clears the list and then adds a whole page of results in one task, so the `count`th item
 * present and the next one absent is that page.
 */
async function listed(page: Page, count: number): Promise<void> {
  const items = page.locator('#requests > li');
  if (count > 0) await items.nth(count - 1).waitFor({ state: 'attached' });
  await items.nth(count).waitFor({ state: 'detached' });
}

const SECRET = 'browser-test-secret';
const sign = (body: string) => `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;

browserTest(
  'the page shows signature results and multipart parts, searches, copies a capture as cURL and downloads HAR, with an empty console',
  async () => {
    const created = await server!.request('POST', '/routes', { body: { verify: { scheme: 'github', secret: SECRET } } });
    const { routeId, url } = created.body as { routeId: string; url: string };
    await rawRequest(
      `${url}/push`,
      'POST',
      [
        ['X-Hub-Signature-256', sign('{"ref":"main"}')],
        ['Content-Type', 'application/json'],
      ],
      '{"ref":"main"}',
    );
    await rawRequest(
      `${url}/forged`,
      'POST',
      [
        ['X-Hub-Signature-256', sign('other')],
        ['Content-Type', 'application/json'],
      ],
      '{"ref":"evil"}',
    );
    const form = new FormData();
    form.append('title', 'hello');
    form.append('file', new Blob([Buffer.from([0, 1, 2])], { type: 'image/png' }), 'a.png');
    await fetch(`${url}/upload`, { method: 'POST', body: form });

    const context = await browser!.newContext({ acceptDownloads: true });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server!.url });
    const page = await context.newPage();
    const messages: string[] = [];
    page.on('console', (message) => messages.push(`${message.type()}: ${message.text()}`));
    page.on('pageerror', (error) => messages.push(`pageerror: ${error.message}`));
    page.on('response', (response) => {
      if (response.status() >= 400) messages.push(`${response.status()} ${response.url()}`);
    });
    await page.goto(`${server!.url}/inspect/${routeId}`);
    await page.locator('#live-status.live').waitFor();
    await page.locator('#requests > li').nth(2).waitFor();

    // Signature results, newest first: the upload (unsigned), the forged one, the valid one.
    expect(await page.locator('#requests > li summary .badge').allTextContents()).toEqual(['signature ✗', 'signature ✗', 'signed ✓']);
    const valid = page.locator('#requests > li').nth(2);
    await valid.locator('summary').click();
    await expect(valid.locator('.signature').textContent()).resolves.toBe('valid (github)');
    const forged = page.locator('#requests > li').nth(1);
    await forged.locator('summary').click();
    await expect(forged.locator('.signature').textContent()).resolves.toBe('invalid (github): no signature matches');

    // Multipart parts.
    const upload = page.locator('#requests > li').first();
    await upload.locator('summary').click();
    const parts = upload.locator('section:has(h3:text("Multipart parts")) tr');
    expect(await parts.allTextContents()).toEqual(['titletext/plain, 5 B: hello', 'filea.png, image/png, 3 B']);

    // Copy as cURL: the command the curl endpoint gives.
    await valid.locator('button.copy-curl').click();
    await valid.locator('button.copy-curl[data-command]').waitFor();
    const expected = await (await fetch(`${server!.url}/inspect/${routeId}/requests/${await valid.getAttribute('data-id')}/curl`)).text();
    expect(await valid.locator('button.copy-curl').getAttribute('data-command')).toBe(expected);
    const copied = await valid.locator('button.copy-curl').textContent();
    if (copied === 'Copied') expect(await page.evaluate('navigator.clipboard.readText()')).toBe(expected);
    else expect(await valid.locator('pre.curl').textContent()).toBe(expected);

    // Search: only the matching capture stays, and the HAR download follows the search.
    await page.fill('#search-q', 'evil');
    await page.click('#search button[type=submit]');
    await page.locator('#search-clear:not([hidden])').waitFor();
    await listed(page, 1);
    expect(await page.locator('#requests > li summary .target').allTextContents()).toEqual([`/${routeId}/forged`]);
    expect(new URL(page.url()).search).toBe('?q=evil');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-har')]);
    const har = JSON.parse(readFileSync((await download.path())!, 'utf8')) as { log: { entries: Array<{ request: { url: string } }> } };
    expect(har.log.entries.map((entry) => entry.request.url)).toEqual([`${server!.url}/${routeId}/forged`]);

    // Clearing the search lists everything again.
    await page.click('#search-clear');
    await listed(page, 3);

    expect(messages).toEqual([]);
    await context.close();
  },
  budget(40_000),
);
