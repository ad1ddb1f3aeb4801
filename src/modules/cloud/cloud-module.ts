import type { DescService } from '@bufbuild/protobuf';
import type { Interceptor, ServiceImpl } from '@connectrpc/connect';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { settingsOf } from '../../config.js';
import type { ModuleContext, ServerModule } from '../../server/module.js';
import { rpcService, type RpcService } from '../../server/rpc-routes.js';
import type { UserService } from '../../services/user-service.js';
import { cachePrincipals, userPrincipalResolver, type PrincipalResolver } from '../../auth/principal.js';
import {
  encodeStatus,
  IdempotencyKeys,
  OPERATION_EVENTS_CHANNEL,
  OperationSweeper,
  OperationWaiters,
  OperationWorker,
  Operations,
  toOperationMessage,
  WORK_CHANNEL,
  type WorkHandler,
} from '../../engines/operations/index.js';
import type { ParentCheck } from '../../services/cloud/named-resources.js';
import { OperationQueries } from '../../services/cloud/operation-queries.js';
import { AppError } from '../../errors.js';
import {
  createAuthInterceptor,
  createEndpointInterceptor,
  createErrorInterceptor,
  createIdempotencyInterceptor,
  type AuthPolicy,
} from '../../handlers/cloud/interceptors.js';
import { apiServiceNameOf, cancelledRpcStatus, toRpcStatus } from '../../handlers/cloud/errors.js';
import { invalidArgumentOnParseFailure, shapeEarlyError } from '../../handlers/cloud/parse-errors.js';
import { resourceKindServiceImpl } from '../../handlers/cloud/named-resource-service.js';
import { operationServiceImpl } from '../../handlers/cloud/operation-service.js';
import type { ResourceKind } from '../../services/cloud/resource-kind.js';
import { CLOUD_RESOURCE_KINDS } from './resource-kinds.js';

/**
 * Another cloud service served behind the same interceptors (auth, endpoints, idempotency, errors).
 * `auth` relaxes the bearer-token requirement of single methods (by local name, e.g. `exchange`).
 */
export interface CloudService {
  service: DescService;
  implementation: Partial<ServiceImpl<DescService>>;
  auth: Record<string, AuthPolicy>;
}

/** A CloudService from a typed implementation. */
export function cloudService<T extends DescService>(
  service: T,
  implementation: Partial<ServiceImpl<T>>,
  auth: Partial<Record<keyof T['method'], AuthPolicy>> = {},
): CloudService {
  return { service, implementation: implementation as Partial<ServiceImpl<DescService>>, auth: auth as Record<string, AuthPolicy> };
}

export interface CloudModuleOptions {
  users: UserService;
  /**
   * The operations of every cloud service (IAM's too): starting one must wake this module's worker.
   * Without it the module makes its own (a cloud module alone, as in-memory tests build it).
   */
  operations?: Operations;
  /** More token kinds (the IAM area's service-account tokens) after user tokens. */
  extraResolvers?: PrincipalResolver[];
  /** Whether a parent id names a project (default: any well-formed `project-…` id). */
  parentExists?: ParentCheck;
  /** More services behind the cloud interceptors (IAM's). */
  services?: CloudService[];
  /** The resource kinds served (default CLOUD_RESOURCE_KINDS). */
  kinds?: readonly ResourceKind[];
}

export interface CloudModule extends ServerModule {
  operations: Operations;
  worker: OperationWorker;
  sweeper: OperationSweeper;
  /** Every cloud RPC service with its interceptors: what the server, the gRPC fast path and tests serve. */
  rpc(): RpcService[];
}

/**
 * The cloud API (docs/cloud-api.md): OperationService and the service of every declared resource kind
 * (src/modules/cloud/resource-kinds.ts: compute instances and disks) over gRPC, gRPC-Web and Connect,
 * every call through one interceptor chain — errors (outermost), endpoints (API_DOMAIN),
 * auth, idempotency — and the operation worker and sweeper running in the background.
 */
export function cloudModule(ctx: ModuleContext, options: CloudModuleOptions): CloudModule {
  const { db, logger } = ctx;
  const config = settingsOf(ctx.config, 'cloud');
  const handlers: Record<string, WorkHandler> = {};
  // Starting an operation wakes the worker built just below (never called before it exists).
  const operations = options.operations ?? new Operations(db.knex, () => worker.wake());
  const worker = new OperationWorker({
    knex: db.knex,
    handlers,
    workMs: config.computeWorkMs,
    leaseMs: config.operationLeaseMs,
    pollMs: config.operationPollMs,
    failureStatus: (error, work) => encodeStatus(toRpcStatus(error, { service: serviceOfWork(work.kind), requestId: work.operationId })),
    cancelledStatus: (work) => encodeStatus(cancelledRpcStatus({ service: serviceOfWork(work.kind), requestId: work.operationId }, work)),
    onError: (error, context) => logger.error({ err: error, context }, 'operation work failed'),
  });
  const sweeper = new OperationSweeper({
    knex: db.knex,
    retentionSeconds: config.operationRetentionSeconds,
    intervalMs: Math.min(60_000, config.operationRetentionSeconds * 250),
    onError: (error, context) => logger.error({ err: error, context }, 'operation sweep failed'),
  });
  const kindContext = {
    knex: db.knex,
    operations,
    parentExists: options.parentExists,
    listScanRows: config.listFilterScanRows,
    quotaPerProject: { instance: config.quotaInstancesPerProject },
  };
  const kindServices = (options.kinds ?? CLOUD_RESOURCE_KINDS).map((kind) => {
    const rules = kind.rules(kindContext);
    Object.assign(handlers, rules.workHandlers);
    return cloudService(kind.service, resourceKindServiceImpl(rules));
  });
  const keys = new IdempotencyKeys(db.knex);
  const authPolicies = new Map<string, AuthPolicy>();
  const waiters = new OperationWaiters({
    load: (ids) => operations.repository.findByIds(ids),
    maxWaiters: config.operationMaxWaiters,
    onError: (error) => logger.error({ err: error }, 'reading completed operations for their waiters failed'),
  });
  const queries = new OperationQueries(operations, { worker, waiters }, config.listFilterScanRows);

  const interceptors: Interceptor[] = [
    createErrorInterceptor({ onInternal: (cause, requestId) => ctx.onError(cause, requestId) }),
    createEndpointInterceptor({ apiDomain: config.apiDomain }),
    createAuthInterceptor({
      resolvers: [userPrincipalResolver(options.users), ...(options.extraResolvers ?? [])].map((resolver) =>
        cachePrincipals(resolver, config.principalCacheMs),
      ),
      policyOf: (service, method) => authPolicies.get(`${service.typeName}/${method.localName}`) ?? 'required',
    }),
    createIdempotencyInterceptor({
      keys,
      loadOperation: async (id) => {
        const row = await operations.get(id);
        if (!row) throw new AppError('not_found', `operation ${id} not found`, { resourceId: id });
        return toOperationMessage(row);
      },
    }),
  ];
  const services = [cloudService(OperationService, operationServiceImpl(queries)), ...kindServices, ...(options.services ?? [])];
  for (const { service, auth } of services) {
    for (const [method, policy] of Object.entries(auth)) authPolicies.set(`${service.typeName}/${method}`, policy);
  }
  const rpcServices = services.map(({ service, implementation }) =>
    rpcService(service, implementation, {
      interceptors,
      adaptHandler: invalidArgumentOnParseFailure,
      shapeError: (error, requestId) => shapeEarlyError(error, { service: apiServiceNameOf(service), requestId }),
    }),
  );

  let unlisten: (() => Promise<void>) | undefined;
  let unlistenEvents: (() => Promise<void>) | undefined;
  return {
    name: 'cloud',
    operations,
    worker,
    sweeper,
    rpc: () => rpcServices,
    async start() {
      // Other processes' new work wakes this worker at once (PGlite: in-process notifications).
      // After a lost LISTEN connection, work enqueued meanwhile by other processes was never announced.
      unlisten = await db
        .listen(WORK_CHANNEL, () => worker.wake(), {
          onReconnect: () => {
            logger.warn({ channel: WORK_CHANNEL }, 'database listener reconnected; looking for work');
            worker.wake();
          },
        })
        .catch(() => undefined);
      // Completions wake OperationService.Wait's waiters; cancel requests reach the work they name.
      // After a lost LISTEN connection, the waited operations are read again (completions were missed;
      // a missed cancel is seen at the holder's next lease renewal or completion).
      unlistenEvents = await db
        .listen(
          OPERATION_EVENTS_CHANNEL,
          (payload) => {
            if (payload.startsWith('cancel:')) worker.cancelRequested(payload.slice('cancel:'.length));
            else waiters.onEvent(payload);
          },
          { onReconnect: () => waiters.resync() },
        )
        .catch(() => undefined);
      worker.start();
      sweeper.start();
    },
    // A shutting-down server answers its waits at once (their current state), so they do not hold
    // the drain for the grace period.
    drain() {
      waiters.close();
    },
    async stop() {
      waiters.close();
      await sweeper.stop();
      await worker.stop();
      await unlisten?.();
      await unlistenEvents?.();
    },
  };
}

/** The api_service_name behind a work kind (`compute.instance.create` → `compute`). */
function serviceOfWork(kind: string): string {
  return kind.split('.', 1)[0] ?? '';
}
