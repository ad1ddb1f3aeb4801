import { jest } from '@jest/globals';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { webhooksCommand } from '../../src/cli/webhooks.js';
import { loadConfig } from '../../src/config.js';
import { build, type App } from '../../src/server/build.js';
import type { Database } from '../../src/store/database.js';
import { openTestDatabase } from '../support/app.js';
import { budget } from '../support/budget.js';
import { rawRequest } from '../modules/webhooks/support.js';

// A server restart and a target outage inside one test: the former fixed 120 s, scaled with the load
// like every other timeout (test/support/budget.ts).
jest.setTimeout(budget(40_000));

interface Received {
  method: string;
  url: string;
  rawHeaders: string[];
  body: Buffer;
}

/** A local "development server" that records what it receives and answers 204. */
class Target {
  readonly received: Received[] = [];
  private readonly waiters: Array<() => void> = [];
  private server: http.Server | undefined;
  port = 0;

  async start(port = 0): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        this.received.push({ method: req.method ?? '', url: req.url ?? '', rawHeaders: req.rawHeaders, body: Buffer.concat(chunks) });
        res.writeHead(204).end();
        for (const wake of this.waiters.splice(0)) wake();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  async waitFor(count: number): Promise<void> {
    while (this.received.length < count) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}

/** Lines a command printed, and a way to wait for one without polling. */
class Lines extends Array<string> {
  private readonly waiters: Array<() => void> = [];
  readonly add = (line: string) => {
    this.push(line);
    for (const wake of this.waiters.splice(0)) wake();
  };

  async waitFor(test: (lines: string[]) => boolean): Promise<void> {
    while (!test(this)) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}

let db: Database | undefined;
let drop: (() => Promise<void>) | undefined;
let app: App | undefined;
let port = 0;
const target = new Target();
const stateDir = mkdtempSync(join(tmpdir(), 'cfs-state-'));
const config = loadConfig({ LOG_LEVEL: 'silent', MIGRATE: 'false', WEBHOOK_BATCH_MS: '1' });

/** The server over the test database; closing it (a restart) leaves the database open for the next one. */
async function startApp(): Promise<void> {
  const shared = new Proxy(db!, { get: (object, key) => (key === 'close' ? async () => undefined : Reflect.get(object, key, object)) });
  app = await build(config, { database: shared });
  port = await app.listen(port, '127.0.0.1');
}

beforeAll(async () => {
  ({ db, drop } = await openTestDatabase());
  await startApp();
  await target.start();
});
afterAll(async () => {
  await app?.close();
  await db?.close();
  await drop?.();
  await target.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

const BINARY = Buffer.from([0, 1, 2, 255, 254, 13, 10, 39, 34]);

test('listen forwards every capture byte for byte, once and in order, across a server restart and a target outage', async () => {
  const server = () => `http://127.0.0.1:${port}`;
  const created = (await (await fetch(`${server()}/routes`, { method: 'POST' })).json()) as { routeId: string; url: string };
  const send = async (n: number, body: Buffer = Buffer.from(`capture ${n}`)) => {
    const answer = await rawRequest(
      `${server()}/${created.routeId}/events/${n}?n=${n}&n=again`,
      'POST',
      [
        ['Content-Type', 'application/octet-stream'],
        ['X-Dup', 'a'],
        ['x-dup', 'b'],
      ],
      body,
    );
    expect(answer.status).toBe(200);
    return JSON.parse(answer.body.toString()).requestId as string;
  };
  const zero = await send(0);
  await send(1);

  const out = new Lines();
  const err = new Lines();
  const controller = new AbortController();
  const listening = webhooksCommand(['listen', created.url, '--forward-to', `http://127.0.0.1:${target.port}/hook`, '--since', zero], {
    out: out.add,
    err: err.add,
    signal: controller.signal,
    stateDir,
  });

  // --since starts after the capture it names (issue 30: it re-delivered that one): 1 comes, 0 does not.
  await target.waitFor(1);
  await send(2, BINARY);
  await target.waitFor(2);

  // A server restart: the stream drops; a capture made as the new server comes up is not lost.
  await app!.close();
  await startApp();
  await send(3);
  await target.waitFor(3);
  await send(4);
  await target.waitFor(4);

  // The target goes down: the capture waits, the failure is reported, and it is delivered once it is back.
  const targetPort = target.port;
  await target.stop();
  await send(5);
  await err.waitFor((lines) => lines.some((line) => line.includes('unreachable')));
  await target.start(targetPort);
  await target.waitFor(5);
  await out.waitFor((lines) => lines.length === 5);

  controller.abort();
  expect(await listening).toBe(0);

  expect(target.received.map((request) => request.url)).toEqual([1, 2, 3, 4, 5].map((n) => `/hook/events/${n}?n=${n}&n=again`));
  expect(target.received.map((request) => request.body.toString('latin1'))).toEqual(
    ['capture 1', BINARY.toString('latin1'), 'capture 3', 'capture 4', 'capture 5'].map((text) => text),
  );
  expect(target.received[1]!.body.equals(BINARY)).toBe(true);
  for (const request of target.received) {
    expect(request.method).toBe('POST');
    const lines = [];
    // Connection is the forwarding connection's own (hop-by-hop), not a captured line.
    for (let index = 0; index < request.rawHeaders.length; index += 2) {
      if (request.rawHeaders[index]!.toLowerCase() !== 'connection') lines.push([request.rawHeaders[index], request.rawHeaders[index + 1]]);
    }
    expect(lines).toEqual([
      ['Host', `127.0.0.1:${target.port}`],
      ['Content-Type', 'application/octet-stream'],
      ['X-Dup', 'a'],
      ['x-dup', 'b'],
      ['Content-Length', String(request.body.length)],
    ]);
  }
  expect(out).toHaveLength(5);
  expect(out[1]).toMatch(new RegExp(`^[0-9a-f-]{36} POST /${created.routeId}/events/2\\?n=2&n=again -> 204 \\d+ms$`));
  expect(err.some((line) => /reconnecting in \d+ ms \(resuming after \d+\)/.test(line))).toBe(true);
});

test('replay sends one capture to the target and exits 0; unknown arguments exit 2', async () => {
  const server = `http://127.0.0.1:${port}`;
  const created = (await (await fetch(`${server}/routes`, { method: 'POST' })).json()) as { routeId: string; url: string };
  const answer = await rawRequest(`${created.url}/one?x=1`, 'PUT', [['Content-Type', 'text/plain']], 'replay me');
  const captureId = JSON.parse(answer.body.toString()).requestId as string;
  const before = target.received.length;
  const out: string[] = [];
  const code = await webhooksCommand(['replay', created.routeId, captureId, '--to', `http://127.0.0.1:${target.port}/again`, '--server', server], {
    out: (line) => out.push(line),
    err: () => undefined,
    stateDir,
  });
  expect(code).toBe(0);
  expect(target.received.slice(before).map((request) => [request.method, request.url, request.body.toString()])).toEqual([
    ['PUT', '/again/one?x=1', 'replay me'],
  ]);
  expect(out[0]).toMatch(/ PUT .* -> 204 \d+ms$/);
  const errors: string[] = [];
  expect(await webhooksCommand(['replay', created.routeId, captureId], { out: () => undefined, err: (line) => errors.push(line) })).toBe(2);
  expect(errors).toEqual(['cfs: --to <url> is required']);
});
