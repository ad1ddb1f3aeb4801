import { ProjectService as ProjectServiceDesc } from '../../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { ServiceAccountService as ServiceAccountServiceDesc } from '../../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { AuthPublicKeyService as AuthPublicKeyServiceDesc } from '../../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { ProfileService as ProfileServiceDesc } from '../../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { TokenExchangeService as TokenExchangeServiceDesc } from '../../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import type { DescService } from '@bufbuild/protobuf';
import { settingsOf } from '../../config.js';
import type { ModuleContext, ServerModule } from '../../server/module.js';
import { GET_HEAD } from '../../server/route-table.js';
import type { PrincipalResolver } from '../../auth/principal.js';
import { serviceAccountPrincipalResolver } from '../../auth/service-account-principal.js';
import type { Operations } from '../../engines/operations/index.js';
import type { ParentCheck } from '../../services/cloud/named-resources.js';
import type { ProjectChild } from '../../services/cloud/resource-kind.js';
import type { UserService } from '../../services/user-service.js';
import { ProjectService } from '../../services/iam/project-service.js';
import { ServiceAccountService } from '../../services/iam/service-account-service.js';
import { PublicKeyService } from '../../services/iam/public-key-service.js';
import { ProfileService } from '../../services/iam/profile-service.js';
import { TokenExchange } from '../../services/iam/token-exchange.js';
import { cloudService, type CloudService } from '../cloud/cloud-module.js';
import { authPublicKeyServiceImpl, profileServiceImpl, projectServiceImpl, serviceAccountServiceImpl } from '../../handlers/iam/resource-services.js';
import { tokenExchangeServiceImpl } from '../../handlers/iam/token-exchange-service.js';
import {
  AUTHORIZATION_SERVER_METADATA_PATH,
  handleAuthorizationServerMetadata,
  handleTokenExchange,
  TOKEN_EXCHANGE_PATH,
} from '../../handlers/iam/token-exchange-http.js';
import { servingOriginOf } from '../../http/serving-origin.js';
import { clientOf } from '../../http/request-client.js';
import { apiServiceNameOf } from '../../handlers/cloud/errors.js';

export interface IamModule extends ServerModule {
  projects: ProjectService;
  serviceAccounts: ServiceAccountService;
  keys: PublicKeyService;
  exchange: TokenExchange;
  /** Bearer tokens of service accounts, for the cloud module's auth interceptor. */
  resolvers: PrincipalResolver[];
  /** "Does this project exist" for every resource living in a project (instances). */
  parentExists: ParentCheck;
  /** The IAM gRPC services, for the cloud module to serve behind its interceptors. */
  services: CloudService[];
}

/**
 * IAM (docs/iam.md): projects, service accounts, their keys, profiles and the token exchange (gRPC and
 * `POST /oauth2/token/exchange`). Makes the tenant and the `default` project at first start. The
 * gRPC services run inside the cloud module (same interceptors, operations and errors): `operations`
 * is the cloud module's one instance; `projectChildren` are the cloud module's resource kinds that live
 * in a project (IAM counts them without knowing them).
 */
export async function iamModule(
  ctx: ModuleContext,
  options: { users: UserService; operations: Operations; projectChildren?: readonly ProjectChild[] },
): Promise<IamModule> {
  const { db, tokens, logger } = ctx;
  const { operations } = options;
  // IAM's own settings, and the cloud family's it serves under (list bounds, the API domain).
  const { iamTokenTtlSeconds } = settingsOf(ctx.config, 'iam');
  const { listFilterScanRows, apiDomain } = settingsOf(ctx.config, 'cloud');
  // The origin its token endpoints name comes from the listener's settings.
  const listener = { tlsCert: ctx.config.tlsCert, port: ctx.config.port };
  const projects = new ProjectService(db.knex, operations, listFilterScanRows, options.projectChildren);
  await projects.ensureTenant();
  const serviceAccounts = new ServiceAccountService(db.knex, operations, (id, trx) => projects.exists(id, trx), listFilterScanRows);
  const keys = new PublicKeyService(db.knex, operations, serviceAccounts, listFilterScanRows);
  const profiles = new ProfileService(options.users, serviceAccounts);
  const exchange = new TokenExchange(
    tokens,
    {
      findKey: (id) => keys.findForExchange(id),
      accountActive: async (id) => (await serviceAccounts.find(id))?.status?.active,
    },
    iamTokenTtlSeconds,
    (reason) => logger.info({ reason }, 'token exchange refused'),
    {
      serviceNames: () =>
        new Set(
          servedServices()
            .map(apiServiceNameOf)
            .filter((name) => name !== ''),
        ),
      apiDomain,
    },
  );
  // Every service of the server, known once all modules gave theirs (`rpc` below): what a token can be for.
  let servedServices: () => readonly DescService[] = () => [];
  const accountLookup = async (id: string) => {
    const account = await serviceAccounts.find(id);
    return account ? { projectId: account.metadata?.parentId ?? '', active: account.status?.active ?? false } : undefined;
  };
  return {
    name: 'iam',
    projects,
    serviceAccounts,
    keys,
    exchange,
    resolvers: [serviceAccountPrincipalResolver(tokens, accountLookup)],
    parentExists: (id, trx) => projects.exists(id, trx),
    services: [
      cloudService(ProjectServiceDesc, projectServiceImpl(projects)),
      cloudService(ServiceAccountServiceDesc, serviceAccountServiceImpl(serviceAccounts)),
      cloudService(AuthPublicKeyServiceDesc, authPublicKeyServiceImpl(keys)),
      cloudService(ProfileServiceDesc, profileServiceImpl(profiles), { get: 'optional' }),
      cloudService(
        TokenExchangeServiceDesc,
        tokenExchangeServiceImpl(exchange, (context) => servingOriginOf(listener, { host: new URL(context.url).host })),
        { exchange: 'public' },
      ),
    ],
    routes: [
      // Every method: RFC 6749's error shape answers the ones it does not take.
      { path: TOKEN_EXCHANGE_PATH, handle: (req, res) => handleTokenExchange(exchange, req, res, servingOriginOf(listener, req.headers, clientOf(req))) },
      {
        path: AUTHORIZATION_SERVER_METADATA_PATH,
        methods: GET_HEAD,
        handle: (req, res) => handleAuthorizationServerMetadata(req, res, servingOriginOf(listener, req.headers, clientOf(req))),
      },
    ],
    // IAM's services are served by the cloud module; this only learns which services the server has.
    rpc: (served) => {
      servedServices = served;
      return [];
    },
  };
}
