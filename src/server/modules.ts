import type { ModuleContext, ServerModule } from './module.js';
import { Operations } from '../engines/operations/index.js';
import { usersModule } from '../modules/users/users-module.js';
import { publishingModule } from '../modules/publishing/publishing-module.js';
import { webhooksModule } from '../modules/webhooks/webhooks-module.js';
import { cloudModule } from '../modules/cloud/cloud-module.js';
import { projectChildren } from '../modules/cloud/resource-kinds.js';
import { iamModule } from '../modules/iam/iam-module.js';
import { contractsModule } from '../modules/contracts/contracts-module.js';

/**
 * Every API family of the server, in the order their paths are matched. Add a module here and the
 * server routes to it, serves its RPC services and runs its background work.
 */
export async function buildModules(ctx: ModuleContext) {
  const users = await usersModule(ctx);
  const modules: ServerModule[] = [users];
  modules.push(await publishingModule(ctx));
  modules.push(await webhooksModule(ctx));
  // One Operations for every cloud service, IAM's included: starting one wakes the cloud worker.
  const operations = new Operations(ctx.db.knex, () => cloud.worker.wake());
  const iam = await iamModule(ctx, { users: users.users, operations, projectChildren: projectChildren() });
  const cloud = cloudModule(ctx, { users: users.users, operations, extraResolvers: iam.resolvers, parentExists: iam.parentExists, services: iam.services });
  modules.push(cloud, iam);
  modules.push(contractsModule({ serviceName: ctx.config.serviceName, metricsEnabled: ctx.config.metricsEnabled })); // /, /openapi, /graphql/*.graphql, /graphql/explorer/*, /docs, gRPC reflection of every service above
  return { modules, users: users.users };
}
