import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { fromBinary, toBinary, create } from '@bufbuild/protobuf';
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
  type HealthCheckResponse,
} from '../../generated/proto/grpc/health/v1/health_pb.js';
import { startServer, type TestServer } from '../support/app.js';
import { build } from '../../src/server/build.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/store/database.js';
import { cloneTemplateDatabase, TcpProxy, viaProxy } from '../hardening/outage-support.js';
import { expectGrpcError, GrpcTestClient } from '../support/grpc.js';
import { budget } from '../support/budget.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');

/** A Watch call through grpc-js: the statuses as they arrive. */
function watch(client: grpc.Client, service = '') {
  const statuses: ServingStatus[] = [];
  const waiters: Array<() => void> = [];
  const call = client.makeServerStreamRequest(
    '/grpc.health.v1.Health/Watch',
    (value: Uint8Array) => Buffer.from(value),
    (buffer: Buffer) => fromBinary(HealthCheckResponseSchema, buffer),
    toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, { service })),
  );
  call.on('data', (message: HealthCheckResponse) => {
    statuses.push(message.status);
    for (const wake of waiters.splice(0)) wake();
  });
  const ended = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  call.on('error', () => undefined); // the status event reports it
  return {
    statuses,
    ended,
    cancel: () => call.cancel(),
    /** Resolves once `count` statuses have arrived. */
    async next(count: number) {
      while (statuses.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
      return statuses.slice(0, count);
    },
  };
}

let server: TestServer;
let client: GrpcTestClient;
beforeAll(async () => {
  server = await startServer({ SHUTDOWN_GRACE_MS: '2000' });
  client = new GrpcTestClient(server.url);
}, budget(10_000));
afterAll(async () => {
  client?.close();
  await server?.close();
});

test('Check answers SERVING for the server and for a service it serves, NOT_FOUND for another', async () => {
  expect((await client.call(Health.method.check, {})).message.status).toBe(ServingStatus.SERVING);
  expect((await client.call(Health.method.check, { service: 'cloud.compute.v1.InstanceService' })).message.status).toBe(ServingStatus.SERVING);
  const error = await expectGrpcError(client.call(Health.method.check, { service: 'no.such.v1.Service' }));
  expect(error.code).toBe(grpc.status.NOT_FOUND);
});

test(
  'buf curl reaches Health/Check over gRPC through reflection',
  async () => {
    const { stdout } = await run(
      join(ROOT, 'node_modules/.bin/buf'),
      ['curl', '--protocol', 'grpc', '--http2-prior-knowledge', '-d', '{}', `${server.url}/grpc.health.v1.Health/Check`],
      { cwd: ROOT },
    );
    expect(JSON.parse(stdout)).toEqual({ status: 'SERVING' });
  },
  budget(10_000),
);

test('Watch sends SERVICE_UNKNOWN for an unknown service and keeps the call open', async () => {
  const watcher = watch(client.client, 'no.such.v1.Service');
  expect(await watcher.next(1)).toEqual([ServingStatus.SERVICE_UNKNOWN]);
  watcher.cancel();
  expect((await watcher.ended).code).toBe(grpc.status.CANCELLED);
});

test(
  'when the database stops answering, Check answers NOT_SERVING and Watch streams the change and the recovery',
  async () => {
    const watcher = watch(client.client);
    expect(await watcher.next(1)).toEqual([ServingStatus.SERVING]);
    // Every pooled connection held by an open transaction: queries queue and the probe gets no answer
    // within its second (PGlite's one connection, or the test pool's five on PostgreSQL).
    const pool = server.app.db.kind === 'pglite' ? 1 : 5;
    const held = await Promise.all(Array.from({ length: pool }, () => server.app.db.knex.transaction()));
    expect(await watcher.next(2)).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
    expect((await client.call(Health.method.check, {})).message.status).toBe(ServingStatus.NOT_SERVING);
    await Promise.all(held.map((trx) => trx.rollback()));
    expect(await watcher.next(3)).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING, ServingStatus.SERVING]);
    watcher.cancel();
    await watcher.ended;
  },
  budget(7_000),
);

const adminUrl = process.env.DATABASE_URL;
(adminUrl ? test : test.skip)(
  'PostgreSQL: a server whose database is down is NOT_SERVING, SERVING again once it is back; shutdown ends a Watch with NOT_SERVING',
  async () => {
    const proxy = await TcpProxy.start({ host: new URL(adminUrl!).hostname, port: Number(new URL(adminUrl!).port || 5432) });
    const clone = await cloneTemplateDatabase(adminUrl!);
    const database = await openDatabase({ databaseUrl: viaProxy(clone.directUrl, proxy), poolMax: 2, connectTimeoutMs: 500, statementTimeoutMs: 800 });
    const app = await build(loadConfig({ LOG_LEVEL: 'silent', MIGRATE: 'false', SHUTDOWN_GRACE_MS: '2000' }), { database });
    const port = await app.listen(0, '127.0.0.1');
    const other = new GrpcTestClient(`http://127.0.0.1:${port}`);
    try {
      const watcher = watch(other.client);
      expect(await watcher.next(1)).toEqual([ServingStatus.SERVING]);
      await proxy.down();
      expect(await watcher.next(2)).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
      expect((await other.call(Health.method.check, {})).message.status).toBe(ServingStatus.NOT_SERVING);
      await proxy.up();
      expect(await watcher.next(3)).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING, ServingStatus.SERVING]);
      const closing = app.close();
      expect(await watcher.next(4)).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING, ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
      expect((await watcher.ended).code).toBe(grpc.status.OK);
      await closing;
    } finally {
      other.close();
      await app.close();
      await proxy.close();
      await clone.drop();
    }
  },
  budget(10_000),
);

// Last in this file: it shuts the shared server down.
test(
  'shutdown sends NOT_SERVING to a watcher and ends its call with OK',
  async () => {
    const watcher = watch(client.client);
    expect(await watcher.next(1)).toEqual([ServingStatus.SERVING]);
    const closing = server.app.close();
    expect(await watcher.next(2)).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
    expect((await watcher.ended).code).toBe(grpc.status.OK);
    await closing;
  },
  budget(7_000),
);
