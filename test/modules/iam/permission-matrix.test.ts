import { status as Code } from '@grpc/grpc-js';
import type { DescService } from '@bufbuild/protobuf';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { ProjectService } from '../../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { ServiceAccountService } from '../../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { AuthPublicKeyService } from '../../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { ProfileService } from '../../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { TokenExchangeService } from '../../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import { GrpcCallError } from '../../support/grpc.js';
import { startCloudServer, waitForOperation, type CloudServer } from '../cloud/fixtures.js';
import { accessTokenOf, createProject, createServiceAccountWithKey, exchangeRequest, jwtOf, type ServiceAccountKey } from './support.js';

/**
 * Every RPC of every cloud service × every kind of caller (docs/iam.md, "Who may call"), enforced by the
 * one `authorize` rule. "own" is a service account of project A acting in A; "other" is a service
 * account of project B acting on A's resources.
 */
type Who = 'admin' | 'reader' | 'own' | 'other' | 'none';
const WHO: Who[] = ['admin', 'reader', 'own', 'other', 'none'];
type Want = Record<Who, Code>;

const { OK, PERMISSION_DENIED: DENIED, UNAUTHENTICATED: UNAUTH } = Code;
/** Reads of a project's resources. */
const READ: Want = { admin: OK, reader: OK, own: OK, other: DENIED, none: UNAUTH };
/** Changes of a project's resources. */
const MUTATE: Want = { admin: OK, reader: DENIED, own: OK, other: DENIED, none: UNAUTH };
/** Changes of projects themselves act on the tenant: admins only. */
const TENANT: Want = { admin: OK, reader: DENIED, own: DENIED, other: DENIED, none: UNAUTH };
/** Project lists: a service account sees its own project only, never an error. */
const LIST_PROJECTS: Want = { admin: OK, reader: OK, own: OK, other: OK, none: UNAUTH };
/** Cancelling a finished operation of a project: the callers who may change it are told it has finished. */
const CANCEL_FINISHED: Want = { ...MUTATE, admin: Code.FAILED_PRECONDITION, own: Code.FAILED_PRECONDITION };
/** Needs no token at all. */
const PUBLIC: Want = { admin: OK, reader: OK, own: OK, other: OK, none: OK };

let cloud: CloudServer;
let tenant: string;
let projectA: string;
let projectB: string;
let own: ServiceAccountKey;
let other: ServiceAccountKey;
const tokens = {} as Record<Who, string | undefined>;

beforeAll(async () => {
  cloud = await startCloudServer({ COMPUTE_WORK_MS: '5' });
  projectA = await createProject(cloud.grpc, cloud.admin.token, 'matrix-a');
  projectB = await createProject(cloud.grpc, cloud.admin.token, 'matrix-b');
  own = await createServiceAccountWithKey(cloud.grpc, cloud.admin.token, projectA, 'own');
  other = await createServiceAccountWithKey(cloud.grpc, cloud.admin.token, projectB, 'other');
  Object.assign(tokens, {
    admin: cloud.admin.token,
    reader: cloud.reader.token,
    own: await accessTokenOf(cloud.grpc, own),
    other: await accessTokenOf(cloud.grpc, other),
    none: undefined,
  });
  tenant = (await cloud.grpc.call(ProjectService.method.get, { id: projectA }, { token: cloud.admin.token })).message.metadata?.parentId ?? '';
});
afterAll(async () => {
  await cloud?.close();
});

let serial = 0;
const unique = (prefix: string) => `${prefix}-${++serial}`;
const admin = () => ({ token: cloud.admin.token });

/** Fresh resources in project A, made by the admin, so each case has its own target. */
const fresh = {
  async instance(stopped = false): Promise<string> {
    const { message } = await cloud.grpc.call(
      InstanceService.method.create,
      { metadata: { parentId: projectA, name: unique('vm') }, spec: { stopped } },
      admin(),
    );
    await waitForOperation(cloud.grpc, cloud.admin.token, message.id);
    return message.resourceId;
  },
  async account(): Promise<string> {
    return (await cloud.grpc.call(ServiceAccountService.method.create, { metadata: { parentId: projectA, name: unique('sa') } }, admin())).message.resourceId;
  },
  async key(): Promise<string> {
    const { message } = await cloud.grpc.call(AuthPublicKeyService.method.generate, { spec: { serviceAccountId: await fresh.account() } }, admin());
    return message.key?.metadata?.id ?? '';
  },
  async emptyProject(): Promise<string> {
    return createProject(cloud.grpc, cloud.admin.token, unique('empty'));
  },
  async operation(): Promise<{ id: string; resourceId: string }> {
    const { message } = await cloud.grpc.call(ServiceAccountService.method.create, { metadata: { parentId: projectA, name: unique('op') } }, admin());
    return { id: message.id, resourceId: message.resourceId };
  },
};

type Call = (token: string | undefined, who: Who) => Promise<unknown>;
const options = (token: string | undefined) => (token ? { token } : {});
const I = InstanceService.method;
const P = ProjectService.method;
const S = ServiceAccountService.method;
const K = AuthPublicKeyService.method;

const MATRIX: Array<[string, { call: Call; want: Want }]> = [
  [
    'cloud.common.v1.OperationService/Get',
    { call: async (t) => cloud.grpc.call(OperationService.method.get, { id: (await fresh.operation()).id }, options(t)), want: READ },
  ],
  [
    'cloud.common.v1.OperationService/Wait',
    { call: async (t) => cloud.grpc.call(OperationService.method.wait, { id: (await fresh.operation()).id }, options(t)), want: READ },
  ],
  [
    // As the mutation that started it; the operation has finished, so whoever may cancel it learns that it cannot be.
    'cloud.common.v1.OperationService/Cancel',
    { call: async (t) => cloud.grpc.call(OperationService.method.cancel, { id: (await fresh.operation()).id }, options(t)), want: CANCEL_FINISHED },
  ],
  [
    'cloud.common.v1.OperationService/List',
    { call: async (t) => cloud.grpc.call(OperationService.method.list, { resourceId: (await fresh.operation()).resourceId }, options(t)), want: READ },
  ],

  ['cloud.compute.v1.InstanceService/Get', { call: async (t) => cloud.grpc.call(I.get, { id: await fresh.instance() }, options(t)), want: READ }],
  [
    'cloud.compute.v1.InstanceService/GetByName',
    {
      call: async (t) => {
        const id = await fresh.instance();
        const name = (await cloud.grpc.call(I.get, { id }, admin())).message.metadata?.name ?? '';
        return cloud.grpc.call(I.getByName, { parentId: projectA, name }, options(t));
      },
      want: READ,
    },
  ],
  ['cloud.compute.v1.InstanceService/List', { call: (t) => cloud.grpc.call(I.list, { parentId: projectA }, options(t)), want: READ }],
  [
    'cloud.compute.v1.InstanceService/Create',
    { call: (t) => cloud.grpc.call(I.create, { metadata: { parentId: projectA, name: unique('vm') } }, options(t)), want: MUTATE },
  ],
  [
    'cloud.compute.v1.InstanceService/Update',
    { call: async (t) => cloud.grpc.call(I.update, { metadata: { id: await fresh.instance() }, spec: { description: 'changed' } }, options(t)), want: MUTATE },
  ],
  ['cloud.compute.v1.InstanceService/Delete', { call: async (t) => cloud.grpc.call(I.delete, { id: await fresh.instance() }, options(t)), want: MUTATE }],
  ['cloud.compute.v1.InstanceService/Start', { call: async (t) => cloud.grpc.call(I.start, { id: await fresh.instance(true) }, options(t)), want: MUTATE }],
  ['cloud.compute.v1.InstanceService/Stop', { call: async (t) => cloud.grpc.call(I.stop, { id: await fresh.instance() }, options(t)), want: MUTATE }],
  [
    'cloud.compute.v1.InstanceService/ListOperationsByParent',
    { call: (t) => cloud.grpc.call(I.listOperationsByParent, { parentId: projectA }, options(t)), want: READ },
  ],

  ['cloud.iam.v1.ProjectService/Get', { call: (t) => cloud.grpc.call(P.get, { id: projectA }, options(t)), want: READ }],
  ['cloud.iam.v1.ProjectService/GetByName', { call: (t) => cloud.grpc.call(P.getByName, { parentId: tenant, name: 'matrix-a' }, options(t)), want: READ }],
  [
    'cloud.iam.v1.ProjectService/List',
    {
      call: async (t, who) => {
        const { message } = await cloud.grpc.call(P.list, { parentId: tenant }, options(t));
        const ids = message.items.map((item) => item.metadata?.id);
        if (who === 'own') expect(ids).toEqual([projectA]);
        if (who === 'other') expect(ids).toEqual([projectB]);
        if (who === 'admin' || who === 'reader') expect(ids).toEqual(expect.arrayContaining([projectA, projectB]));
        return message;
      },
      want: LIST_PROJECTS,
    },
  ],
  [
    'cloud.iam.v1.ProjectService/Create',
    { call: (t) => cloud.grpc.call(P.create, { metadata: { parentId: tenant, name: unique('p') } }, options(t)), want: TENANT },
  ],
  // A service account may not change even its own project: the project is its container, not inside it.
  [
    'cloud.iam.v1.ProjectService/Update',
    { call: (t) => cloud.grpc.call(P.update, { metadata: { id: projectA }, spec: { description: unique('d') } }, options(t)), want: TENANT },
  ],
  [
    'cloud.iam.v1.ProjectService/Delete',
    { call: async (t, who) => cloud.grpc.call(P.delete, { id: who === 'admin' ? await fresh.emptyProject() : projectA }, options(t)), want: TENANT },
  ],

  ['cloud.iam.v1.ServiceAccountService/Get', { call: (t) => cloud.grpc.call(S.get, { id: own.serviceAccountId }, options(t)), want: READ }],
  ['cloud.iam.v1.ServiceAccountService/GetByName', { call: (t) => cloud.grpc.call(S.getByName, { parentId: projectA, name: 'own' }, options(t)), want: READ }],
  ['cloud.iam.v1.ServiceAccountService/List', { call: (t) => cloud.grpc.call(S.list, { parentId: projectA }, options(t)), want: READ }],
  [
    'cloud.iam.v1.ServiceAccountService/Create',
    { call: (t) => cloud.grpc.call(S.create, { metadata: { parentId: projectA, name: unique('sa') } }, options(t)), want: MUTATE },
  ],
  [
    'cloud.iam.v1.ServiceAccountService/Update',
    { call: async (t) => cloud.grpc.call(S.update, { metadata: { id: await fresh.account() }, spec: { description: 'changed' } }, options(t)), want: MUTATE },
  ],
  ['cloud.iam.v1.ServiceAccountService/Delete', { call: async (t) => cloud.grpc.call(S.delete, { id: await fresh.account() }, options(t)), want: MUTATE }],

  ['cloud.iam.v1.AuthPublicKeyService/Get', { call: (t) => cloud.grpc.call(K.get, { id: own.keyId }, options(t)), want: READ }],
  ['cloud.iam.v1.AuthPublicKeyService/List', { call: (t) => cloud.grpc.call(K.list, { parentId: projectA }, options(t)), want: READ }],
  [
    'cloud.iam.v1.AuthPublicKeyService/Create',
    {
      call: async (t) => {
        const { generateKeyPairSync } = await import('node:crypto');
        const data = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
        return cloud.grpc.call(K.create, { spec: { serviceAccountId: own.serviceAccountId, data } }, options(t));
      },
      want: MUTATE,
    },
  ],
  [
    'cloud.iam.v1.AuthPublicKeyService/Generate',
    { call: async (t) => cloud.grpc.call(K.generate, { spec: { serviceAccountId: await fresh.account() } }, options(t)), want: MUTATE },
  ],
  ['cloud.iam.v1.AuthPublicKeyService/Activate', { call: async (t) => cloud.grpc.call(K.activate, { id: await fresh.key() }, options(t)), want: MUTATE }],
  ['cloud.iam.v1.AuthPublicKeyService/Deactivate', { call: async (t) => cloud.grpc.call(K.deactivate, { id: await fresh.key() }, options(t)), want: MUTATE }],
  ['cloud.iam.v1.AuthPublicKeyService/Delete', { call: async (t) => cloud.grpc.call(K.delete, { id: await fresh.key() }, options(t)), want: MUTATE }],

  [
    'cloud.iam.v1.ProfileService/Get',
    {
      call: async (t, who) => {
        const { message } = await cloud.grpc.call(ProfileService.method.get, {}, options(t));
        const variant = { admin: 'userProfile', reader: 'userProfile', own: 'serviceAccountProfile', other: 'serviceAccountProfile', none: 'anonymousProfile' }[
          who
        ];
        expect(message.profile.case).toBe(variant);
        return message;
      },
      want: PUBLIC,
    },
  ],
  // The exchange never looks at the bearer token: whoever sends a valid JWT gets a token.
  [
    'cloud.iam.v1.TokenExchangeService/Exchange',
    { call: (t) => cloud.grpc.call(TokenExchangeService.method.exchange, exchangeRequest(jwtOf(own)), options(t)), want: PUBLIC },
  ],
];

const SERVICES: DescService[] = [
  OperationService,
  InstanceService,
  ProjectService,
  ServiceAccountService,
  AuthPublicKeyService,
  ProfileService,
  TokenExchangeService,
];

test('the matrix names every RPC of every cloud service exactly once', () => {
  const served = SERVICES.flatMap((service) => service.methods.map((method) => `${service.typeName}/${method.name}`)).sort();
  expect(MATRIX.map(([rpc]) => rpc).sort()).toEqual(served);
});

const CASES = MATRIX.flatMap(([rpc, { call, want }]) => WHO.map((who) => [rpc, who, Code[want[who]], call] as const));

test.each(CASES)('%s as %s answers %s', async (_rpc, who, wantName, call) => {
  let code: Code = OK;
  let error: GrpcCallError | undefined;
  try {
    await call(tokens[who], who);
  } catch (thrown) {
    if (!(thrown instanceof GrpcCallError)) throw thrown;
    error = thrown;
    code = thrown.code;
  }
  expect(Code[code]).toBe(wantName);
  if (code === DENIED) expect(error?.serviceError?.details.case).toBe('permissionDenied');
});
