import http2 from 'node:http2';
import net from 'node:net';
import http from 'node:http';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { build, type App } from '../../src/server/build.js';
import { loadConfig } from '../../src/config.js';
import type { Database } from '../../src/store/database.js';
import { Health } from '../../generated/proto/grpc/health/v1/health_pb.js';
import { openTestDatabase } from '../support/app.js';
import { ConnectTestClient, GrpcTestClient, type RpcTestClient } from '../support/grpc.js';
import { budget } from '../support/budget.js';

/**
 * Shutdown and connection age at the HTTP edge (issue 27, items 2 and 4), through real servers on
 * port 0. Each test builds its own server on one shared store, which outlives the servers so that
 * what a request did can be read after the server that took it is gone.
 */
let store: { db: Database; drop(): Promise<void> };

beforeAll(async () => {
  store = await openTestDatabase();
});

afterAll(async () => {
  await store?.db.close();
  await store?.drop();
});

async function serve(env: Record<string, string> = {}): Promise<{ app: App; port: number; url: string }> {
  const database: Database = { ...store.db, close: async () => undefined };
  const app = await build(loadConfig({ LOG_LEVEL: 'silent', MIGRATE: 'false', ...env }), { database });
  const port = await app.listen(0, '127.0.0.1');
  return { app, port, url: `http://127.0.0.1:${port}` };
}

/** A live webhook route, made directly in the store (no per-address route limit is spent). */
async function newRoute(response?: { delayMs: number }): Promise<string> {
  const id = randomUUID();
  await store.db.knex('webhook_routes').insert({ id, expires_at: new Date(Date.now() + 3_600_000), response_delay_ms: response?.delayMs ?? 0 });
  return id;
}

async function capturesOf(routeId: string): Promise<number> {
  const [row] = await store.db.knex('webhook_requests').where({ route_id: routeId }).count<{ count: number }[]>('* as count');
  return Number(row?.count ?? 0);
}

/** Polls until `condition` holds, within the test's budget (no fixed sleeps). */
async function until(condition: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10));
}

function captureRequest(routeId: string, marker: string): string {
  const body = JSON.stringify({ marker });
  return `POST /${routeId}/drain HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** A raw keep-alive HTTP/1.1 connection: counts the responses (status lines) it reads. */
async function rawConnection(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  let text = '';
  const waiting: Array<() => void> = [];
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    text += chunk;
    for (const wake of waiting.splice(0)) wake();
  });
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  // A response may follow the previous body on the same line (no CRLF after a Content-Length body).
  const responses = () => (text.match(/HTTP\/1\.1 \d{3} /g) ?? []).length;
  return {
    socket,
    ended,
    responses,
    /** Resolves once `count` responses have been read completely enough to see their status lines. */
    responsesAtLeast: (count: number) => read(() => responses() >= count),
    /** Resolves once what was read ends with `tail`. */
    endsWith: (tail: string) => read(() => text.endsWith(tail)),
  };
  async function read(done: () => boolean): Promise<void> {
    while (!done()) {
      await Promise.race([
        new Promise<void>((resolve) => waiting.push(resolve)),
        ended.then(() => Promise.reject(new Error(`connection closed after ${responses()} responses: ${text}`))),
      ]);
    }
  }
}

describe('shutdown', () => {
  test(
    'readiness turns 503 at once while every other request is still served for SHUTDOWN_DELAY_MS; /healthz stays 200; then the listener closes',
    async () => {
      const delayMs = 1500;
      const { app, url, port } = await serve({ SHUTDOWN_DELAY_MS: String(delayMs) });
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      const started = performance.now();
      const closed = app.close();
      const readiness = await fetch(`${url}/readyz`);
      const notReadyAt = performance.now() - started;
      expect(readiness.status).toBe(503);
      expect(await readiness.json()).toEqual({ status: 'shutting down' });
      // Served normally meanwhile, on new connections too.
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/api`, { headers: { connection: 'close' } })).status).toBe(200);
      const routeId = await newRoute();
      expect((await fetch(`${url}/${routeId}`, { method: 'POST', body: 'during the delay' })).status).toBe(200);
      // Connections are accepted until the delay is over.
      let refusedAt = 0;
      while (refusedAt === 0) {
        const socket = net.connect(port, '127.0.0.1');
        const outcome = await new Promise<string>((resolve) => {
          socket.once('connect', () => resolve('connected'));
          socket.once('error', () => resolve('refused'));
        });
        socket.destroy();
        if (outcome === 'refused') refusedAt = performance.now() - started;
        else await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await closed;
      expect(notReadyAt).toBeLessThan(delayMs / 2);
      expect(refusedAt).toBeGreaterThanOrEqual(delayMs - 50);
    },
    budget(20_000),
  );

  test(
    'an HTTP/2 client gets a GOAWAY and its request in flight completes',
    async () => {
      const { app, url } = await serve();
      const routeId = await newRoute({ delayMs: 800 });
      const session = http2.connect(url);
      session.on('error', () => undefined);
      const goaway = once(session, 'goaway') as Promise<[number, number]>;
      const stream = session.request({ ':method': 'POST', ':path': `/${routeId}/in-flight`, 'content-type': 'text/plain' });
      stream.end('in flight at shutdown');
      const response = once(stream, 'response') as Promise<[http2.IncomingHttpHeaders]>;
      let body = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => (body += chunk));
      const streamEnded = once(stream, 'end');
      // The capture is stored before its delayed answer: the request is in flight from here.
      await until(async () => (await capturesOf(routeId)) === 1);
      const closed = app.close();
      const [code] = await goaway;
      expect(code).toBe(http2.constants.NGHTTP2_NO_ERROR);
      const [headers] = await response;
      await streamEnded;
      expect(headers[':status']).toBe(200);
      await closed;
      expect(session.closed || session.destroyed).toBe(true);
    },
    budget(20_000),
  );

  test(
    'an event stream ends cleanly with a retry: hint, so the client reconnects elsewhere and resumes',
    async () => {
      const { app, url } = await serve();
      const routeId = await newRoute();
      const text: string[] = [];
      const response = await new Promise<http.IncomingMessage>((resolve, reject) =>
        http.get(`${url}/inspect/${routeId}/stream`, { headers: { accept: 'text/event-stream' }, agent: false }, resolve).on('error', reject),
      );
      expect(response.statusCode).toBe(200);
      response.setEncoding('utf8');
      let aborted = false;
      response.on('aborted', () => (aborted = true));
      response.on('data', (chunk: string) => text.push(chunk));
      const ended = once(response, 'end');
      await until(() => text.join('').includes(': connected'));
      await app.close();
      await ended;
      expect(aborted).toBe(false);
      expect(response.complete).toBe(true);
      expect(text.join('')).toMatch(/\n\nretry: \d+\n\n$/);
    },
    budget(20_000),
  );

  const ROUNDS = 8;
  test.each([
    ['sent on an idle kept-alive connection as shutdown begins', 'idle'],
    ['sent right after the answer to a request that was in flight when shutdown began', 'after-answer'],
    ['pipelined behind a request in flight when shutdown began', 'pipelined'],
    // The response began before the shutdown, so it said keep-alive: the server half-closes after it.
    ['sent right after the end of an event stream that shutdown ended', 'after-stream'],
  ] as const)(
    'a request %s is either answered or never executed (repeated to catch the race)',
    async (_name, mode) => {
      let answered = 0;
      let refused = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const { app, port } = await serve();
        const slowRoute = await newRoute({ delayMs: 100 });
        const raced = await newRoute();
        const connection = await rawConnection(port);
        let closed: Promise<void>;
        if (mode === 'idle') {
          connection.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
          await connection.responsesAtLeast(1);
          // Around the start of the shutdown: before it, in the same tick, or just after.
          if (round % 2 === 0) connection.socket.write(captureRequest(raced, `round ${round}`));
          closed = app.close();
          if (round % 2 === 1) setImmediate(() => connection.socket.write(captureRequest(raced, `round ${round}`)));
        } else if (mode === 'after-answer') {
          connection.socket.write(captureRequest(slowRoute, 'slow'));
          await until(async () => (await capturesOf(slowRoute)) === 1);
          closed = app.close();
          await connection.responsesAtLeast(1);
          if (!connection.socket.destroyed) connection.socket.write(captureRequest(raced, `round ${round}`));
        } else if (mode === 'after-stream') {
          connection.socket.write(`GET /inspect/${slowRoute}/stream HTTP/1.1\r\nHost: localhost\r\naccept: text/event-stream\r\n\r\n`);
          await connection.endsWith(': connected\n\n\r\n');
          closed = app.close();
          // The chunked body's last chunk: the stream has ended.
          await connection.endsWith('0\r\n\r\n');
          if (!connection.socket.destroyed) connection.socket.write(captureRequest(raced, `round ${round}`));
        } else {
          connection.socket.write(captureRequest(slowRoute, 'slow') + captureRequest(raced, `round ${round}`));
          await until(async () => (await capturesOf(slowRoute)) === 1);
          closed = app.close();
        }
        await closed;
        await connection.ended;
        const executed = await capturesOf(raced);
        // The first answer is the request before the race (healthz, or the slow capture).
        const answers = connection.responses() - 1;
        // Never executed without an answer.
        expect({ round, executed, answered: answers }).toEqual({ round, executed: answers, answered: answers });
        if (answers > 0) answered++;
        else refused++;
      }
      expect(answered + refused).toBe(ROUNDS);
    },
    budget(120_000),
  );
});

describe('readiness', () => {
  test(
    'probes from three balancers cost no database write, and no statement at all while the server has traffic',
    async () => {
      // No background statement in the count: the operation worker looks for work only at start.
      const { app, url } = await serve({ OPERATION_POLL_MS: '600000' });
      const statements: string[] = [];
      const record = (query: { sql: string }) => statements.push(query.sql);
      store.db.knex.on('query', record);
      try {
        const probe = async () => {
          for (let round = 0; round < 10; round++) expect((await fetch(`${url}/readyz`)).status).toBe(200);
        };
        await Promise.all([probe(), probe(), probe()]);
        expect(statements.filter((sql) => /^\s*(insert|update|delete|merge)\b/i.test(sql))).toEqual([]);
        // At most one `select 1` per second of probing (none while other statements answer).
        expect(statements.length).toBeLessThanOrEqual(3);
        statements.length = 0;
        const busy = async () => {
          for (let round = 0; round < 10; round++) {
            // A public read that queries the store (the articles list), as traffic does.
            expect((await fetch(`${url}/v1/articles`)).status).toBe(200);
            expect((await fetch(`${url}/readyz`)).status).toBe(200);
          }
        };
        await busy();
        expect(statements.filter((sql) => /select 1/i.test(sql))).toEqual([]);
      } finally {
        store.db.knex.off('query', record);
        await app.close();
      }
      expect(await store.db.knex('limit_counters').where({ key: 'readiness-probe' }).first()).toBeUndefined();
    },
    budget(20_000),
  );
});

describe('MAX_CONNECTION_AGE_MS', () => {
  /** A TCP relay in front of the server that counts the connections clients open. */
  async function countingRelay(port: number): Promise<{ url: string; connections(): number; close(): Promise<void> }> {
    let count = 0;
    const sockets = new Set<net.Socket>();
    const relay = net.createServer((client) => {
      count++;
      const upstream = net.connect(port, '127.0.0.1');
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('error', () => undefined);
        socket.once('close', () => sockets.delete(socket));
      }
      client.pipe(upstream).pipe(client);
      client.once('close', () => upstream.destroy());
      upstream.once('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const address = relay.address() as net.AddressInfo;
    return {
      url: `http://127.0.0.1:${address.port}`,
      connections: () => count,
      close: async () => {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => relay.close(resolve));
      },
    };
  }

  // grpc-js retries a stream the server refused unprocessed (gRPC's transparent retry); connect-node
  // 2.1 fails it, so its only failures may be those refused streams (a call that never ran).
  test.each([
    [
      'grpc-js',
      'with no failed call',
      (url: string) => ({ client: new GrpcTestClient(url), close: (client: RpcTestClient) => (client as GrpcTestClient).client.close() }),
    ],
    [
      'connect-node (gRPC)',
      'and a call fails only when its stream raced the GOAWAY and was refused unprocessed',
      (url: string) => ({ client: new ConnectTestClient(createGrpcTransport({ baseUrl: url })), close: () => undefined }),
    ],
  ] as const)(
    'a %s client making calls on one long-lived HTTP/2 connection is moved to new connections %s',
    async (name, _outcome, makeClient) => {
      const { app, port } = await serve({ MAX_CONNECTION_AGE_MS: '1000', MAX_CONNECTION_AGE_GRACE_MS: '1000' });
      const relay = await countingRelay(port);
      const { client, close } = makeClient(relay.url);
      let calls = 0;
      const failures: unknown[] = [];
      try {
        const caller = async () => {
          // Until the third connection: at least two were aged out under the calls.
          while (relay.connections() < 3 && failures.length < 20) {
            await client.call(Health.method.check, {}).then(
              () => calls++,
              (error: unknown) => failures.push(error),
            );
          }
        };
        await Promise.all([caller(), caller(), caller(), caller()]);
      } finally {
        close(client);
        await relay.close();
        await app.close();
      }
      if (name === 'grpc-js') expect(failures).toEqual([]);
      else for (const failure of failures) expect(String(failure)).toMatch(/REFUSED_STREAM/);
      expect(calls).toBeGreaterThan(0);
    },
    budget(30_000),
  );

  test(
    'an HTTP/1.1 keep-alive connection past its age answers with Connection: close and the client moves to a new one',
    async () => {
      const { app, port } = await serve({ MAX_CONNECTION_AGE_MS: '1000' });
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const sockets = new Set<net.Socket>();
      let closing = '';
      try {
        while (sockets.size < 2) {
          const response = await new Promise<http.IncomingMessage>((resolve, reject) =>
            http.get({ host: '127.0.0.1', port, path: '/healthz', agent }, resolve).on('error', reject),
          );
          sockets.add(response.socket);
          if (response.headers.connection === 'close') closing = 'close';
          response.resume();
          await once(response, 'end');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      } finally {
        agent.destroy();
        await app.close();
      }
      expect(closing).toBe('close');
    },
    budget(20_000),
  );
});
