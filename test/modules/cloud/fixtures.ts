import { build, type App } from '../../../src/server/build.js';
import { loadConfig } from '../../../src/config.js';
import type { Database } from '../../../src/store/database.js';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import type { Operation } from '../../../generated/proto/cloud/common/v1/operation_pb.js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import type { Instance } from '../../../generated/proto/cloud/compute/v1/instance_pb.js';
import { startServer, type TestServer } from '../../support/app.js';
import { GrpcTestClient } from '../../support/grpc.js';
import { bootstrapAdmin, createAccount, type Account } from '../users/users-fixtures.js';
import { seedProjects } from '../../support/projects.js';

export const PROJECT = 'project-e00test';

/** The project ids the cloud tests use; instances need a real project since IAM landed. */
export const TEST_PROJECTS = [
  PROJECT,
  'project-busy',
  'project-ep',
  'project-idem',
  'project-idem2',
  'project-idem3',
  'project-imm',
  'project-masks',
  'project-other',
  'project-paging',
  'project-pair',
  'project-perm',
  'project-quota',
  'project-quota2',
  'project-restart',
  'project-ver',
];

export interface CloudServer {
  server: TestServer;
  grpc: GrpcTestClient;
  admin: Account;
  reader: Account;
  close(): Promise<void>;
}

/** A server with an admin and a non-admin user, and a grpc-js client over h2c. */
export async function startCloudServer(env: Record<string, string> = {}): Promise<CloudServer> {
  const server = await startServer({ COMPUTE_WORK_MS: '20', OPERATION_POLL_MS: '50', SHUTDOWN_GRACE_MS: '300', ...env });
  await seedProjects(server.app.db.knex, TEST_PROJECTS);
  const admin = await bootstrapAdmin(server);
  const reader = await createAccount(server, admin, 'reader');
  const grpc = new GrpcTestClient(server.url);
  return {
    server,
    grpc,
    admin,
    reader,
    async close() {
      grpc.close();
      await server.close();
    },
  };
}

/** Polls OperationService.Get until the operation has a status (no fixed sleeps: it returns as soon as it is done). */
export async function waitForOperation(grpc: GrpcTestClient, token: string, id: string, timeoutMs = 20_000): Promise<Operation> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { message } = await grpc.call(OperationService.method.get, { id }, { token });
    if (message.status) return message;
    if (Date.now() > deadline) throw new Error(`operation ${id} did not complete within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Creates an instance and waits until it runs. */
export async function createInstance(cloud: CloudServer, name: string, spec: Record<string, unknown> = {}, parentId = PROJECT): Promise<Instance> {
  const { message: operation } = await cloud.grpc.call(InstanceService.method.create, { metadata: { parentId, name }, spec }, { token: cloud.admin.token });
  const done = await waitForOperation(cloud.grpc, cloud.admin.token, operation.id);
  expect(done.status?.code).toBe(0);
  const { message } = await cloud.grpc.call(InstanceService.method.get, { id: operation.resourceId }, { token: cloud.admin.token });
  return message;
}

/** Builds and starts another server over an existing database; closing it leaves the database open. */
export async function startServerOn(db: Database, env: Record<string, string> = {}): Promise<{ app: App; url: string; close(): Promise<void> }> {
  const shared: Database = { ...db, close: async () => undefined };
  const app = await build(loadConfig({ LOG_LEVEL: 'silent', MIGRATE: 'false', SHUTDOWN_GRACE_MS: '300', ...env }), { database: shared });
  await seedProjects(db.knex, TEST_PROJECTS);
  const port = await app.listen(0, '127.0.0.1');
  return { app, url: `http://127.0.0.1:${port}`, close: () => app.close() };
}
