import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import { build, type App } from '../../src/server/build.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { pgliteTemplatePath } from './template.js';
import { scratchDatabase } from '../../scripts/support/fresh-store.js';
import { closeWhenFileEnds } from './left-open.js';

export interface TestServer {
  app: App;
  url: string;
  port: number;
  /** Sends a request and checks the response against the contract the path belongs to. */
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  /** Sent as is, without JSON encoding. */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** Skip the contract check (for requests no contract describes). */
  unchecked?: boolean;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  text: string;
  // Any JSON answer; the contract check (not the type) says what shape it has.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/**
 * Opens a fresh database for one test file: a clone of the migrated template on PostgreSQL
 * (DATABASE_URL), or the PGlite template loaded into memory.
 */
export async function openTestDatabase(): Promise<{ db: Database; drop(): Promise<void> }> {
  const url = process.env.DATABASE_URL;
  if (!url) {
    const dump = new Blob([readFileSync(pgliteTemplatePath())]);
    const db = await openDatabase({ dataDir: 'memory://', loadDataDir: dump });
    return { db, drop: async () => undefined };
  }
  const scratch = await scratchDatabase(url, 'test', process.env.TEST_TEMPLATE_DB);
  const db = await openDatabase({ databaseUrl: scratch.url, poolMax: 5 });
  return { db, drop: scratch.drop };
}

/** Starts the real server on port 0 over a fresh database. */
/**
 * What every test server runs with, unless its test says otherwise. Keep-alive: PGlite runs in this
 * process, and a long statement on a busy machine can hold the event loop past the keep-alive timeout;
 * both sides' idle timers are then overdue at once and the next fetch may be written to a socket the
 * server closes in the same turn (ECONNRESET, seen at load 40 in two files). Tests of the timeout set it.
 */
const TEST_DEFAULTS = { LOG_LEVEL: 'silent', MIGRATE: 'false', KEEP_ALIVE_TIMEOUT_MS: '600000' };

export async function startServer(env: Record<string, string> = {}): Promise<TestServer> {
  const { db, drop } = await openTestDatabase();
  // Closed when the file ends even if the start fails or outlives a timed-out beforeAll.
  const closeDatabase = closeWhenFileEnds(async () => {
    await db.close();
    await drop();
  });
  const config = loadConfig({ ...TEST_DEFAULTS, ...env });
  const app = await build(config, { database: db });
  const close = closeWhenFileEnds(async () => {
    await app.close();
    await closeDatabase();
  });
  const port = await app.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${port}`;
  return {
    app,
    url,
    port,
    request: (method, path, options = {}) => sendChecked(app, url, method, path, options),
    close,
  };
}

async function sendChecked(app: App, url: string, method: string, path: string, options: RequestOptions): Promise<TestResponse> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const response = await fetch(`${url}${path}`, { method, headers, body });
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  const parsed = /json/.test(contentType) && text ? JSON.parse(text) : text;
  const result: TestResponse = { status: response.status, headers: response.headers, text, body: parsed };
  if (!options.unchecked) expectMatchesContract(app, method, path, result);
  return result;
}

/**
 * Every response of every integration test is checked against the OpenAPI document of its path:
 * a documented status, and a body valid against that status's schema.
 */
/** A second server on `first`'s database, as another process or replica would be. */
export interface PeerServer {
  app: App;
  port: number;
  url: string;
  close(): Promise<void>;
}

/**
 * Starts a second server sharing `first`'s database: on PostgreSQL through its own pool and LISTEN
 * connection (two processes in all but name), on PGlite through the same embedded instance (PGlite
 * cannot be shared between processes; its NOTIFY is delivered in-process).
 */
export async function startPeerServer(first: TestServer, env: Record<string, string> = {}): Promise<PeerServer> {
  let database: Database;
  if (first.app.db.kind === 'postgres') {
    const connection = (first.app.db.knex.client as { config: { connection: { connectionString: string } } }).config.connection;
    database = await openDatabase({ databaseUrl: connection.connectionString, poolMax: 3 });
  } else {
    database = { ...first.app.db, close: async () => undefined };
  }
  const app = await build(loadConfig({ ...TEST_DEFAULTS, ...env }), { database });
  const close = closeWhenFileEnds(() => app.close());
  const port = await app.listen(0, '127.0.0.1');
  return { app, port, url: `http://127.0.0.1:${port}`, close };
}

export function expectMatchesContract(app: App, method: string, path: string, response: TestResponse): void {
  const pathOnly = path.split('?')[0] ?? path;
  for (const [name, rest] of Object.entries(app.restApis)) {
    const operation = rest.match(method, pathOnly);
    if (!operation) continue;
    const documented = Object.keys(operation.responses ?? {});
    if (!documented.includes(String(response.status)) && !documented.includes('default')) {
      throw new Error(
        `${name}: ${method} ${path} answered ${response.status}, which ${operation.operationId} does not document (${documented.join(', ')}): ${response.text}`,
      );
    }
    if (response.text === '') return;
    // The engine validates against the JSON schema; an HTML or raw-bytes answer has none to meet.
    const contentType = response.headers.get('content-type') ?? '';
    if (contentType !== '' && !/json/i.test(contentType)) return;
    const result = rest.api.validateResponse(response.body, operation, response.status);
    if (result.errors && result.errors.length > 0) {
      throw new Error(`${name}: ${method} ${path} ${response.status} body violates the contract: ${JSON.stringify(result.errors)}\n${response.text}`);
    }
    return;
  }
}

/** One HTTP/2 request on its own session; answers status, headers and body. */
export async function h2Request(url: string, path: string, method = 'GET', options: http2.SecureClientSessionOptions = {}) {
  const session = http2.connect(url, options);
  try {
    return await new Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const stream = session.request({ ':path': path, ':method': method });
      let headers: http2.IncomingHttpHeaders = {};
      let body = '';
      stream.on('response', (received) => (headers = received));
      stream.on('data', (chunk: Buffer) => (body += chunk.toString()));
      stream.on('end', () => resolve({ status: Number(headers[':status']), headers, body }));
      stream.on('error', reject);
    });
  } finally {
    session.close();
  }
}
