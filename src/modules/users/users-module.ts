import { settingsOf } from '../../config.js';
import { ROOT } from '../../server/paths.js';
import { createRestApi } from '../../http/rest-api.js';
import type { ModuleContext, ServerModule } from '../../server/module.js';
import { rpcService } from '../../server/rpc-routes.js';
import { UserService } from '../../services/user-service.js';
import { renderUserApiError, userApiHandlers } from '../../handlers/users.js';
import { serverInfoService } from '../../handlers/server-info.js';

/**
 * Request bodies of the users API may be 3 MiB: a profile picture may be a `data:` URL of up to
 * 1,400,000 characters (users.yaml `ProfilePicture`, an image of ~1 MiB), and a picture somewhat
 * over that still reaches the contract, which names the field (400), instead of a bare 413.
 */
const USERS_BODY_LIMIT_BYTES = 3 * 1024 * 1024;

/** The User Account API (`/api`, contracts/openapi/users.yaml) and the ServerInfo RPC. */
export async function usersModule(ctx: ModuleContext): Promise<ServerModule & { users: UserService }> {
  const users = new UserService(ctx.db.knex, ctx.tokens, settingsOf(ctx.config, 'users'));
  const metrics = ctx.metrics;
  if (metrics) users.observeSignIns((outcome) => metrics.observeSignIn('users', outcome));
  const { adminUsername, adminPassword } = ctx.config;
  if (adminUsername && adminPassword && (await users.ensureAdmin(adminUsername, adminPassword))) {
    ctx.logger.info({ admin: adminUsername }, 'created the configured admin');
  }
  const setupCode = await users.pendingSetupCode();
  if (setupCode) {
    ctx.logger.warn(
      { setupCode },
      `no admin exists yet: create the first one from this machine, or from elsewhere with the header X-Setup-Code: ${setupCode} (docs/users-api.md, "First run")`,
    );
  }
  const api = await createRestApi({
    contractPath: `${ROOT}contracts/openapi/users.yaml`,
    handlers: userApiHandlers(users, ctx.config.serviceName),
    renderError: renderUserApiError,
    bodyLimitBytes: USERS_BODY_LIMIT_BYTES,
    securityHandlers: { bearerAuth: (headers) => users.authenticate(headers.authorization) },
    onError: ctx.onError,
  });
  return {
    name: 'users',
    users,
    routes: [{ prefix: '/api', handle: api.handle, renderError: renderUserApiError }],
    rpc: () => [rpcService(...serverInfoService(ctx.config.serviceName))],
    restApis: { users: api },
  };
}
