import { Code, ConnectError, createClient, createRouterTransport, type Client } from '@connectrpc/connect';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { ServiceErrorSchema, ServiceError_RetryType as RetryType } from '../../../generated/proto/cloud/common/v1/error_pb.js';
import { openTestDatabase } from '../../support/app.js';
import { loadConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/logger.js';
import { TokenService } from '../../../src/auth/token-service.js';
import { UserService } from '../../../src/services/user-service.js';
import { AppError } from '../../../src/errors.js';
import { cloudModule, type CloudModule } from '../../../src/modules/cloud/cloud-module.js';
import { toConnectError } from '../../../src/handlers/cloud/errors.js';
import { rpcRoutes } from '../../../src/server/rpc-routes.js';
import type { Database } from '../../../src/store/database.js';

let db: Database;
let drop: () => Promise<void>;
let module: CloudModule;
let instances: Client<typeof InstanceService>;
let operations: Client<typeof OperationService>;
let adminToken: string;
const internalCauses: unknown[] = [];

beforeAll(async () => {
  ({ db, drop } = await openTestDatabase());
  const config = loadConfig({ LOG_LEVEL: 'silent', COMPUTE_WORK_MS: '0', OPERATION_POLL_MS: '20' });
  const tokens = await TokenService.create(db.knex);
  const users = new UserService(db.knex, tokens, config);
  await users.ensureAdmin('root', 'root-password-1');
  adminToken = (await users.signIn('root', 'root-password-1', '127.0.0.1', { local: true, setupCode: undefined })).accessToken;
  module = cloudModule({ config, db, logger: createLogger('silent'), tokens, onError: (cause) => internalCauses.push(cause) }, { users });
  await module.start?.();
  const transport = createRouterTransport(rpcRoutes(module.rpc(), [], config.rpcMaxMessageBytes));
  instances = createClient(InstanceService, transport);
  operations = createClient(OperationService, transport);
});
afterAll(async () => {
  await module.stop?.();
  await db?.close();
  await drop?.();
});

/** The ConnectError a call must fail with. */
async function rejection(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (reason) {
    return ConnectError.from(reason);
  }
  throw new Error('the call succeeded but should have failed');
}

const auth = () => ({ headers: { authorization: `Bearer ${adminToken}` } });

/** Resolves when the worker reports the operation finished (or at once if it already is). */
async function finished(id: string): Promise<void> {
  let onFinished: (done: string) => void = () => undefined;
  const event = new Promise<void>((resolve) => {
    onFinished = (done) => {
      if (done === id) resolve();
    };
    module.worker.on('finished', onFinished);
  });
  if ((await module.operations.get(id))?.status === null) await event;
  module.worker.off('finished', onFinished);
}

test('over the in-memory Connect transport, create completes through the worker and get reads the result', async () => {
  const operation = await instances.create({ metadata: { parentId: 'project-mem', name: 'mem-vm' } }, auth());
  await finished(operation.id);
  const read = await operations.get({ id: operation.id }, auth());
  expect(read.status?.code).toBe(0);
  const instance = await instances.get({ id: operation.resourceId }, auth());
  expect(instance.metadata?.name).toBe('mem-vm');
});

test('Connect clients read the ServiceError from the error details', async () => {
  const error = await rejection(instances.get({ id: 'instance-missing' }, auth()));
  expect(error.code).toBe(Code.NotFound);
  const [detail] = error.findDetails(ServiceErrorSchema);
  expect(detail?.details).toMatchObject({ case: 'resourceNotFound', value: { resourceId: 'instance-missing' } });
  expect(detail?.service).toBe('compute');
});

test('the auth interceptor refuses calls without a bearer token', async () => {
  const error = await rejection(instances.list({ parentId: 'project-mem' }));
  expect(error.code).toBe(Code.Unauthenticated);
  expect(error.findDetails(ServiceErrorSchema)).toHaveLength(1);
});

const MAPPING: Array<[string, { given: AppError; want: { code: Code; detail: string | undefined; retry: RetryType } }]> = [
  [
    'invalid_argument → bad_request',
    {
      given: new AppError('invalid_argument', 'bad', { violations: [{ field: 'a.b', message: 'x' }] }),
      want: { code: Code.InvalidArgument, detail: 'badRequest', retry: RetryType.NOTHING },
    },
  ],
  [
    'unauthenticated → no detail kind',
    { given: new AppError('unauthenticated', 'no'), want: { code: Code.Unauthenticated, detail: undefined, retry: RetryType.NOTHING } },
  ],
  [
    'permission_denied → permission_denied',
    {
      given: new AppError('permission_denied', 'no', { resourceId: 'project-1' }),
      want: { code: Code.PermissionDenied, detail: 'permissionDenied', retry: RetryType.NOTHING },
    },
  ],
  [
    'not_found → resource_not_found',
    { given: new AppError('not_found', 'no', { resourceId: 'x' }), want: { code: Code.NotFound, detail: 'resourceNotFound', retry: RetryType.NOTHING } },
  ],
  [
    'already_exists → resource_already_exists',
    {
      given: new AppError('already_exists', 'dup', { resourceId: 'x' }),
      want: { code: Code.AlreadyExists, detail: 'resourceAlreadyExists', retry: RetryType.NOTHING },
    },
  ],
  [
    'failed_precondition → bad_resource_state',
    { given: new AppError('failed_precondition', 'state'), want: { code: Code.FailedPrecondition, detail: 'badResourceState', retry: RetryType.UNIT_OF_WORK } },
  ],
  [
    'aborted with a running operation → operation_conflict, CALL',
    {
      given: new AppError('aborted', 'busy', { detail: { kind: 'operation_conflict', conflictingOperationId: 'operation-1' } }),
      want: { code: Code.Aborted, detail: 'operationConflict', retry: RetryType.CALL },
    },
  ],
  [
    'aborted with a stale version → resource_conflict',
    {
      given: new AppError('aborted', 'stale', { detail: { kind: 'resource_conflict' } }),
      want: { code: Code.Aborted, detail: 'resourceConflict', retry: RetryType.UNIT_OF_WORK },
    },
  ],
  [
    'resource_exhausted with a quota → quota_failure',
    {
      given: new AppError('resource_exhausted', 'full', { detail: { kind: 'quota_failure', quota: 'q', limit: 1, requested: 2 } }),
      want: { code: Code.ResourceExhausted, detail: 'quotaFailure', retry: RetryType.NOTHING },
    },
  ],
  [
    'resource_exhausted otherwise → too_many_requests',
    {
      given: new AppError('resource_exhausted', 'slow down', { retryAfterSeconds: 3 }),
      want: { code: Code.ResourceExhausted, detail: 'tooManyRequests', retry: RetryType.CALL },
    },
  ],
  [
    'unimplemented → no detail kind',
    { given: new AppError('unimplemented', 'elsewhere'), want: { code: Code.Unimplemented, detail: undefined, retry: RetryType.NOTHING } },
  ],
  [
    'internal → internal_error with the request id',
    { given: new AppError('internal', 'db exploded'), want: { code: Code.Internal, detail: 'internalError', retry: RetryType.CALL } },
  ],
];

test.each(MAPPING)('error mapping: %s', (_name, { given, want }) => {
  const error = toConnectError(given, { service: 'compute', requestId: 'req-1' });
  expect(error.code).toBe(want.code);
  const [detail] = error.findDetails(ServiceErrorSchema);
  expect(detail?.details.case).toBe(want.detail);
  expect(detail?.retryType).toBe(want.retry);
  expect(error.metadata.get('x-request-id')).toBe('req-1');
});

test('an unknown error becomes INTERNAL with a generic message; the cause goes to the log only', () => {
  const logged: unknown[] = [];
  const cause = new Error('connection refused to 10.0.0.5');
  const error = toConnectError(cause, { service: 'compute', requestId: 'req-9' }, (c) => logged.push(c));
  expect(error.code).toBe(Code.Internal);
  expect(error.rawMessage).not.toMatch(/10\.0\.0\.5/);
  expect(error.findDetails(ServiceErrorSchema)[0]?.details).toMatchObject({ case: 'internalError', value: { requestId: 'req-9' } });
  expect(logged).toEqual([cause]);
  expect(internalCauses).toEqual([]);
});

test('a 429-style error carries retry-after', () => {
  expect(
    toConnectError(new AppError('resource_exhausted', 'slow', { retryAfterSeconds: 7 }), { service: 'compute', requestId: '' }).metadata.get('retry-after'),
  ).toBe('7');
});
