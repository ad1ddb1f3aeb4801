import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { closeWhenFileEnds } from './left-open.js';

export const CHROMIUM = '/usr/bin/chromium';
export const haveChromium = existsSync(CHROMIUM);

/**
 * Headless Chromium for a test file, closed when the file ends in every path (a failed test, a
 * timed-out beforeAll, a launch that finishes after the file gave up on it).
 */
export async function launchChromium(): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  closeWhenFileEnds(() => browser.close());
  return browser;
}

/** Everything a page reports that a user would see in the developer console: messages of level warning and above, page errors, failed requests. */
export function consoleOf(page: Page): string[] {
  const seen: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') seen.push(`${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => seen.push(`pageerror: ${error.message}`));
  page.on('requestfailed', (request) => seen.push(`requestfailed: ${request.url()} ${request.failure()?.errorText ?? ''}`));
  return seen;
}
