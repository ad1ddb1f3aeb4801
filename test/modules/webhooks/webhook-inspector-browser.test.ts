import type { Browser } from 'playwright-core';
import { startServer, type TestServer } from '../../support/app.js';
import { createRoute, rawRequest } from './support.js';
import { budget } from '../../support/budget.js';
import { CHROMIUM, haveChromium, launchChromium } from '../../support/browser.js';

if (!haveChromium) console.warn(`SKIPPED the webhook inspector browser test: ${CHROMIUM} is missing (CI installs it with apt-get install chromium)`);
const browserTest = haveChromium ? test : test.skip;

let server: TestServer;
let browser: Browser | undefined;
beforeAll(async () => {
  server = await startServer();
  if (haveChromium) {
    browser = await launchChromium();
  }
}, budget(20_000));
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

browserTest(
  'a webhook appears on the open page without a reload, and a captured script is shown as text, never run',
  async () => {
    const { routeId } = await createRoute(server);
    const page = await browser!.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${server.url}/inspect/${routeId}`);
    await page.locator('#live-status.live').waitFor();
    await expect(page.locator('#capture-url').textContent()).resolves.toBe(`${server.url}/${routeId}`);

    const script = '<script>window.__pwned = true</script><img src=x onerror="window.__pwned = true">';
    await rawRequest(`${server.url}/${routeId}/github?event=push`, 'POST', [['Content-Type', 'text/html']], script);
    const entry = page.locator('#requests > li').first();
    await entry.waitFor();
    await expect(entry.locator('summary .method').textContent()).resolves.toBe('POST');
    await entry.locator('summary').click();
    await expect(entry.locator('pre.body').first().textContent()).resolves.toBe(script);
    expect(await page.evaluate(() => (globalThis as { __pwned?: boolean }).__pwned)).toBeUndefined();
    expect(await page.locator('#requests script, #requests img').count()).toBe(0);

    // The newest capture goes on top, live as well.
    await rawRequest(`${server.url}/${routeId}`, 'PUT', [['Content-Type', 'application/json']], '{"second":true}');
    await page.locator('#requests > li').nth(1).waitFor();
    await expect(page.locator('#requests > li').first().locator('summary .method').textContent()).resolves.toBe('PUT');
    expect(pageErrors).toEqual([]);
    expect(violations).toEqual([]);
    await page.close();
  },
  budget(20_000),
);

browserTest(
  'captures made before the page was opened are listed newest first after a load',
  async () => {
    const { routeId } = await createRoute(server);
    for (const method of ['GET', 'POST', 'DELETE']) await rawRequest(`${server.url}/${routeId}`, method);
    const page = await browser!.newPage();
    await page.goto(`${server.url}/inspect/${routeId}`);
    await page.locator('#requests > li').nth(2).waitFor();
    expect(await page.locator('#requests > li summary .method').allTextContents()).toEqual(['DELETE', 'POST', 'GET']);
    await page.close();
  },
  budget(20_000),
);
