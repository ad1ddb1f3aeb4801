import { jest } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import { build, type App } from '../../src/server/build.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { scratchDatabase, type ScratchDatabase } from '../../scripts/support/fresh-store.js';
import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import type { TestResponse, TestServer } from '../support/app.js';
import { budget } from '../support/budget.js';
import { GrpcTestClient } from '../support/grpc.js';
import { startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { seedProjects } from '../support/projects.js';
import { bootstrapAdmin, createAccount } from '../modules/users/users-fixtures.js';
import { PROJECT, waitForOperation } from '../modules/cloud/fixtures.js';
import { createRoute, openEventStream, rawRequest } from '../modules/webhooks/support.js';

/**
 * The server behind Debian's PgBouncer (1.18) in transaction mode with default settings: DATABASE_URL
 * through PgBouncer, DATABASE_LISTEN_URL straight to PostgreSQL, DATABASE_POOL_MODE=transaction.
 * PostgreSQL only (PgBouncer pools PostgreSQL connections; PGlite has none); CI installs pgbouncer,
 * so a missing one fails the test with how to install it.
 */
const onPostgres = process.env.DATABASE_URL ? describe : describe.skip;
jest.setTimeout(budget(30_000));

onPostgres('through PgBouncer in transaction mode (PostgreSQL only: PGlite has no connections to pool)', () => {
  let scratch: ScratchDatabase;
  let bouncer: PgBouncer;
  let throughBouncer: string;
  let app: App | undefined;
  let server: TestServer;

  beforeAll(async () => {
    scratch = await scratchDatabase(process.env.DATABASE_URL as string, 'bouncer', process.env.TEST_TEMPLATE_DB);
    bouncer = await startPgBouncer(scratch.url);
    throughBouncer = bouncer.url;
    const config = loadConfig({
      DATABASE_URL: throughBouncer,
      DATABASE_LISTEN_URL: scratch.url,
      DATABASE_POOL_MODE: 'transaction',
      LOG_LEVEL: 'silent',
      COMPUTE_WORK_MS: '20',
      OPERATION_POLL_MS: '50',
      SHUTDOWN_GRACE_MS: '300',
    });
    // MIGRATE stays on: the migration lock is taken on the direct connection, the check through PgBouncer.
    app = await build(config);
    await seedProjects(app.db.knex, [PROJECT]);
    const port = await app.listen(0, '127.0.0.1');
    const url = `http://127.0.0.1:${port}`;
    server = { app, url, port, request: (method, path, options = {}) => send(url, method, path, options), close: async () => undefined };
  });

  afterAll(async () => {
    await app?.close();
    await bouncer?.stop();
    await scratch?.drop();
  });

  test('REST writes and reads go through PgBouncer, pooled reads included (unnamed statements on every connection)', async () => {
    const admin = await bootstrapAdmin(server);
    const accounts = await Promise.all(['ada', 'bob', 'cy', 'dee', 'eve', 'fay'].map((name) => createAccount(server, admin, name)));
    // Many concurrent reads spread over the pool's connections and PgBouncer's server connections: a
    // named statement prepared on one would be unknown on another ("prepared statement … does not exist").
    const reads = await Promise.all(
      Array.from({ length: 60 }, (_, index) => accounts[index % accounts.length]!).map((account) =>
        server.request('GET', `/api/users/${account.id}`, { token: admin.token }),
      ),
    );
    expect(reads.map((read) => read.status)).toEqual(reads.map(() => 200));
    expect(reads.map((read) => read.body.name)).toEqual(Array.from({ length: 60 }, (_, index) => accounts[index % accounts.length]!.name));
  });

  test('a gRPC Create completes: its operation is claimed, run and finished through PgBouncer', async () => {
    const admin = await bootstrapAdmin(server);
    const grpc = new GrpcTestClient(server.url);
    try {
      const { message: operation } = await grpc.call(
        InstanceService.method.create,
        { metadata: { parentId: PROJECT, name: 'bouncer-vm' }, spec: {} },
        { token: admin.token },
      );
      const done = await waitForOperation(grpc, admin.token, operation.id, budget(10_000));
      expect(done.status?.code).toBe(0);
      const { message } = await grpc.call(InstanceService.method.get, { id: operation.resourceId }, { token: admin.token });
      expect(message.metadata?.name).toBe('bouncer-vm');
    } finally {
      grpc.close();
    }
  });

  test('a webhook capture reaches the SSE stream: NOTIFY sent through PgBouncer, LISTEN on DATABASE_LISTEN_URL', async () => {
    const { routeId } = await createRoute(server);
    const stream = await openEventStream(`${server.url}/inspect/${routeId}/stream`);
    try {
      expect(stream.status).toBe(200);
      const answer = await rawRequest(`${server.url}/${routeId}/through-bouncer`, 'POST', [['Content-Type', 'text/plain']], 'pooled');
      expect(answer.status).toBe(200);
      const event = JSON.parse((await stream.next()).data);
      expect(event).toMatchObject({ routeId, path: `/${routeId}/through-bouncer`, body: 'pooled' });
    } finally {
      stream.close();
    }
  });

  describe('statement timeouts', () => {
    let store: Database | undefined;
    afterAll(() => store?.close());

    test('PgBouncer refuses statement_timeout as a startup parameter (why DATABASE_POOL_MODE=transaction exists)', async () => {
      const session = await openDatabase({ databaseUrl: throughBouncer, poolMax: 1 });
      try {
        await expect(session.knex.raw('select 1')).rejects.toThrow(/unsupported startup parameter: statement_timeout/);
      } finally {
        await session.close();
      }
    });

    test('still fire through PgBouncer, outside and inside transactions, and the connection serves on afterwards', async () => {
      store = await openDatabase({ databaseUrl: throughBouncer, listenUrl: scratch.url, poolMode: 'transaction', poolMax: 1, statementTimeoutMs: 300 });
      const knex = store.knex;
      const started = performance.now();
      await expect(knex.raw('select pg_sleep(5)')).rejects.toMatchObject({ code: '57014' });
      expect(performance.now() - started).toBeLessThan(budget(3000));
      await expect(knex.transaction((trx) => trx.raw('select pg_sleep(5)'))).rejects.toMatchObject({ code: '57014' });
      expect((await knex.raw('select 1 as one')).rows).toEqual([{ one: 1 }]);
      // A statement that ends in time is not cancelled later (its deadline is cleared).
      await knex.raw('select pg_sleep(0.05)');
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect((await knex.raw('select 2 as two')).rows).toEqual([{ two: 2 }]);
    });
  });
});

/** A request as the test server's, without the contract check (this file checks transport, not shapes). */
async function send(
  url: string,
  method: string,
  path: string,
  options: { body?: unknown; token?: string; headers?: Record<string, string> },
): Promise<TestResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const response = await fetch(`${url}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await response.text();
  const body = /json/.test(response.headers.get('content-type') ?? '') && text ? JSON.parse(text) : text;
  return { status: response.status, headers: response.headers, text, body };
}
