import type { ModuleContext, ServerModule } from './module.js';
import { usersModule } from '../handlers/users-module.js';
import { publishingModule } from '../handlers/publishing-module.js';

/**
 * Every API family of the server, in the order their paths are matched. Add a module here and the
 * server routes to it, serves its RPC services and runs its background work.
 */
export async function buildModules(ctx: ModuleContext) {
  const users = await usersModule(ctx);
  const modules: ServerModule[] = [users];
  modules.push(await publishingModule(ctx));
  return { modules, users: users.users };
}
