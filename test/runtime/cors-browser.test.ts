import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { startServer, type TestServer } from '../support/app.js';
import { bootstrapAdmin } from '../modules/users/users-fixtures.js';
import { budget } from '../support/budget.js';
import { CHROMIUM, haveChromium, launchChromium } from '../support/browser.js';

if (!haveChromium) console.warn(`SKIPPED the CORS browser test: ${CHROMIUM} is missing (CI installs it with apt-get install chromium)`);
const browserTest = haveChromium ? test : test.skip;

/** What the page's script reports about one cross-origin call. */
interface CallResult {
  ok: boolean;
  status?: number;
  body?: unknown;
  requestId?: string | null;
  error?: string;
}

// The page's origin: a second server on another port (another origin to the browser), serving one empty page.
let pageServer: http.Server;
let pageOrigin: string;
let withCors: TestServer;
let withoutCors: TestServer;
let browser: Browser | undefined;
let page: Page;

beforeAll(async () => {
  pageServer = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>client app</title><p>another origin</p>');
  });
  await new Promise<void>((resolve) => pageServer.listen(0, '127.0.0.1', resolve));
  pageOrigin = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;
  [withCors, withoutCors] = await Promise.all([startServer({ CORS_ORIGINS: pageOrigin }), startServer()]);
  if (haveChromium) {
    browser = await launchChromium();
    page = await browser.newPage();
    await page.goto(pageOrigin);
  }
}, budget(20_000));
afterAll(async () => {
  await browser?.close();
  await Promise.all([withCors?.close(), withoutCors?.close()]);
  await new Promise((resolve) => pageServer.close(resolve));
});

/** A REST call with a bearer token (a preflighted request), made by the page's script. */
function restCall(apiUrl: string, token: string): Promise<CallResult> {
  return page.evaluate(
    async ({ apiUrl, token }) => {
      try {
        const response = await fetch(`${apiUrl}/api/users`, { headers: { authorization: `Bearer ${token}` } });
        return { ok: true, status: response.status, body: await response.json(), requestId: response.headers.get('x-request-id') };
      } catch (error) {
        return { ok: false, error: String(error) };
      }
    },
    { apiUrl, token },
  );
}

/** A Connect JSON RPC, as @connectrpc/connect-web sends it (Content-Type JSON and the protocol version header). */
function connectCall(apiUrl: string): Promise<CallResult> {
  return page.evaluate(async (apiUrl) => {
    try {
      const response = await fetch(`${apiUrl}/grpc.health.v1.Health/Check`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'connect-protocol-version': '1', 'connect-timeout-ms': '5000' },
        body: '{}',
      });
      return { ok: true, status: response.status, body: await response.json(), requestId: response.headers.get('x-request-id') };
    } catch (error) {
      return { ok: false, error: String(error) };
    }
  }, apiUrl);
}

browserTest(
  'a page on another origin calls a REST endpoint with Authorization and a Connect RPC when its origin is allowed',
  async () => {
    const admin = await bootstrapAdmin(withCors);
    const rest = await restCall(withCors.url, admin.token);
    expect(rest).toMatchObject({ ok: true, status: 200 });
    expect((rest.body as Array<{ name: string }>).map((user) => user.name)).toContain(admin.name);
    // An exposed header: the script can read it.
    expect(rest.requestId).toMatch(/\S/);
    const rpc = await connectCall(withCors.url);
    expect(rpc).toMatchObject({ ok: true, status: 200, body: { status: 'SERVING' } });
    expect(rpc.requestId).toMatch(/\S/);
  },
  budget(10_000),
);

browserTest(
  'without CORS_ORIGINS the browser refuses both calls (CORS failure, not an HTTP error)',
  async () => {
    const admin = await bootstrapAdmin(withoutCors);
    const rest = await restCall(withoutCors.url, admin.token);
    expect(rest).toEqual({ ok: false, error: 'TypeError: Failed to fetch' });
    const rpc = await connectCall(withoutCors.url);
    expect(rpc).toEqual({ ok: false, error: 'TypeError: Failed to fetch' });
    // The same calls from the page's own origin are fine: the refusal is the browser's CORS check.
    expect((await fetch(`${withoutCors.url}/api/users`, { headers: { authorization: `Bearer ${admin.token}` } })).status).toBe(200);
  },
  budget(10_000),
);
