/**
 * The gRPC contract cases of the IAM services (docs/iam.md), merged into RPC_CASES
 * (test/contract/grpc-cases.ts): a success case and the documented errors of every RPC.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import type { Message } from '@bufbuild/protobuf';
import { ProjectService } from '../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { ServiceAccountService } from '../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { AuthPublicKeyService } from '../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { ProfileService } from '../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { TokenExchangeService } from '../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import type { Operation } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import { signServiceAccountJwt } from '../../src/engines/service-account-jwt/index.js';
import type { RpcCase, RpcContext } from './grpc-cases.js';
import type { StatusName } from './grpc-checks.js';

const P = ProjectService.method;
const S = ServiceAccountService.method;
const K = AuthPublicKeyService.method;
const NONE = { token: undefined };
const EXCHANGE = {
  grantType: 'urn:ietf:params:oauth:grant-type:token-exchange',
  requestedTokenType: 'urn:ietf:params:oauth:token-type:access_token',
  subjectTokenType: 'urn:ietf:params:oauth:token-type:jwt',
};

function ok<M extends Message>(
  name: string,
  call: (ctx: RpcContext) => Promise<{ message: M }>,
  check?: (message: M, ctx: RpcContext) => Promise<void> | void,
): RpcCase {
  return { name, want: 'OK', call, check: check as RpcCase['check'] };
}

function fails(want: StatusName, name: string, call: (ctx: RpcContext) => Promise<{ message: Message }>): RpcCase {
  return { name, want, call };
}

/** IAM mutations answer an Operation that is already complete with OK. */
function complete(operation: Operation): void {
  assert.equal(operation.status?.code, 0, 'an IAM mutation answers a completed Operation');
}

interface Robot {
  projectId: string;
  tenant: string;
  accountId: string;
  keyId: string;
  privateKey: string;
}

/** A project with a service account and a generated key, shared by the IAM cases. */
const robot = (ctx: RpcContext) =>
  ctx.memo<Robot>('iam-robot', async () => {
    const projectId = await ctx.projectFor('iam');
    const tenant = (await ctx.grpc.call(P.get, { id: projectId }, { token: ctx.admin })).message.metadata?.parentId ?? '';
    const { message: account } = await ctx.grpc.call(S.create, { metadata: { parentId: projectId, name: 'contract-robot' } }, { token: ctx.admin });
    const { message: key } = await ctx.grpc.call(K.generate, { spec: { serviceAccountId: account.resourceId } }, { token: ctx.admin });
    return { projectId, tenant, accountId: account.resourceId, keyId: key.key?.metadata?.id ?? '', privateKey: key.privateKey };
  });
const jwtOf = (r: Robot, ttlSeconds?: number) =>
  signServiceAccountJwt({ serviceAccountId: r.accountId, keyId: r.keyId, privateKey: r.privateKey }, { ttlSeconds });
const robotToken = (ctx: RpcContext) =>
  ctx.memo(
    'iam-robot-token',
    async () => (await ctx.grpc.call(TokenExchangeService.method.exchange, { ...EXCHANGE, subjectToken: jwtOf(await robot(ctx)) })).message.accessToken,
  );
const publicPem = () => generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
const freshAccount = async (ctx: RpcContext, name: string) =>
  (await ctx.grpc.call(S.create, { metadata: { parentId: (await robot(ctx)).projectId, name } }, { token: ctx.admin })).message.resourceId;
const freshKey = async (ctx: RpcContext) =>
  (await ctx.grpc.call(K.create, { spec: { serviceAccountId: (await robot(ctx)).accountId, data: publicPem() } }, { token: ctx.admin })).message.resourceId;

export const IAM_RPC_CASES: Record<string, RpcCase[]> = {
  '/cloud.iam.v1.ProjectService/Get': [
    ok(
      'a reader reads a project',
      async (ctx) => ctx.grpc.call(P.get, { id: (await robot(ctx)).projectId }, { token: ctx.reader }),
      (project) => assert.equal(project.status?.active, true),
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(P.get, { id: 'project-0000000000' }, { token: ctx.admin })),
    fails('PERMISSION_DENIED', 'a service account reading another project', async (ctx) =>
      ctx.grpc.call(P.get, { id: ctx.project }, { token: await robotToken(ctx) }),
    ),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(P.get, { id: ctx.project }, NONE)),
  ],
  '/cloud.iam.v1.ProjectService/GetByName': [
    ok(
      'the default project made at first start',
      (ctx) => ctx.grpc.call(P.getByName, { name: 'default' }, { token: ctx.reader }),
      (project) => assert.match(project.metadata?.parentId ?? '', /^tenant-/),
    ),
    fails('NOT_FOUND', 'an unknown name', (ctx) => ctx.grpc.call(P.getByName, { name: 'no-such-project' }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'no name', (ctx) => ctx.grpc.call(P.getByName, {}, { token: ctx.admin })),
  ],
  '/cloud.iam.v1.ProjectService/List': [
    ok(
      "lists the tenant's projects",
      (ctx) => ctx.grpc.call(P.list, {}, { token: ctx.reader }),
      (page) => assert.ok(page.items.some((item) => item.metadata?.name === 'default')),
    ),
    fails('INVALID_ARGUMENT', 'a filter', (ctx) => ctx.grpc.call(P.list, { filter: 'name = "x"' }, { token: ctx.admin })),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(P.list, {}, NONE)),
  ],
  '/cloud.iam.v1.ProjectService/Create': [
    ok(
      'creates a project under the tenant',
      (ctx) => ctx.grpc.call(P.create, { metadata: { name: 'contract-created' }, spec: { description: 'x' } }, { token: ctx.admin }),
      complete,
    ),
    fails('ALREADY_EXISTS', 'a duplicate name', (ctx) => ctx.grpc.call(P.create, { metadata: { name: 'default' } }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'no name', (ctx) => ctx.grpc.call(P.create, {}, { token: ctx.admin })),
    fails('PERMISSION_DENIED', 'a plain user', (ctx) => ctx.grpc.call(P.create, { metadata: { name: 'denied' } }, { token: ctx.reader })),
  ],
  '/cloud.iam.v1.ProjectService/Update': [
    ok(
      'replaces the description',
      async (ctx) => ctx.grpc.call(P.update, { metadata: { id: (await robot(ctx)).projectId }, spec: { description: 'updated' } }, { token: ctx.admin }),
      complete,
    ),
    fails('ABORTED', 'a stale resource_version', async (ctx) =>
      ctx.grpc.call(P.update, { metadata: { id: (await robot(ctx)).projectId, resourceVersion: 999n } }, { token: ctx.admin }),
    ),
    fails('INVALID_ARGUMENT', 'a malformed reset mask', async (ctx) =>
      ctx.grpc.call(P.update, { metadata: { id: (await robot(ctx)).projectId } }, { token: ctx.admin, headers: { 'x-resetmask': 'spec.(' } }),
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(P.update, { metadata: { id: 'project-0000000000' } }, { token: ctx.admin })),
  ],
  '/cloud.iam.v1.ProjectService/Delete': [
    ok(
      'deletes an empty project',
      async (ctx) => {
        const { message } = await ctx.grpc.call(P.create, { metadata: { name: 'contract-deleted' } }, { token: ctx.admin });
        return ctx.grpc.call(P.delete, { id: message.resourceId }, { token: ctx.admin });
      },
      complete,
    ),
    fails('FAILED_PRECONDITION', 'a project holding service accounts', async (ctx) =>
      ctx.grpc.call(P.delete, { id: (await robot(ctx)).projectId }, { token: ctx.admin }),
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(P.delete, { id: 'project-0000000000' }, { token: ctx.admin })),
  ],

  '/cloud.iam.v1.ServiceAccountService/Get': [
    ok(
      'reads a service account',
      async (ctx) => ctx.grpc.call(S.get, { id: (await robot(ctx)).accountId }, { token: ctx.reader }),
      (account) => assert.equal(account.status?.active, true),
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(S.get, { id: 'serviceaccount-0000000000' }, { token: ctx.admin })),
    fails('UNAUTHENTICATED', 'an invalid token', async (ctx) => ctx.grpc.call(S.get, { id: (await robot(ctx)).accountId }, { token: 'not-a-token' })),
  ],
  '/cloud.iam.v1.ServiceAccountService/GetByName': [
    ok('reads a service account by project and name', async (ctx) =>
      ctx.grpc.call(S.getByName, { parentId: (await robot(ctx)).projectId, name: 'contract-robot' }, { token: ctx.reader }),
    ),
    fails('NOT_FOUND', 'an unknown name', async (ctx) =>
      ctx.grpc.call(S.getByName, { parentId: (await robot(ctx)).projectId, name: 'nobody' }, { token: ctx.admin }),
    ),
    fails('INVALID_ARGUMENT', 'no parent_id', (ctx) => ctx.grpc.call(S.getByName, { name: 'x' }, { token: ctx.admin })),
  ],
  '/cloud.iam.v1.ServiceAccountService/List': [
    ok(
      'a service account lists the accounts of its project',
      async (ctx) => ctx.grpc.call(S.list, { parentId: (await robot(ctx)).projectId }, { token: await robotToken(ctx) }),
      (page) => assert.ok(page.items.length >= 1),
    ),
    fails('PERMISSION_DENIED', 'a service account listing another project', async (ctx) =>
      ctx.grpc.call(S.list, { parentId: ctx.project }, { token: await robotToken(ctx) }),
    ),
    fails('INVALID_ARGUMENT', 'a garbage page token', async (ctx) =>
      ctx.grpc.call(S.list, { parentId: (await robot(ctx)).projectId, pageToken: 'garbage' }, { token: ctx.admin }),
    ),
  ],
  '/cloud.iam.v1.ServiceAccountService/Create': [
    ok(
      'creates a service account',
      async (ctx) => ctx.grpc.call(S.create, { metadata: { parentId: (await robot(ctx)).projectId, name: 'contract-created' } }, { token: ctx.admin }),
      complete,
    ),
    fails('ALREADY_EXISTS', 'a duplicate name in the project', async (ctx) =>
      ctx.grpc.call(S.create, { metadata: { parentId: (await robot(ctx)).projectId, name: 'contract-robot' } }, { token: ctx.admin }),
    ),
    fails('NOT_FOUND', 'a project that does not exist', (ctx) =>
      ctx.grpc.call(S.create, { metadata: { parentId: 'project-0000000000', name: 'x' } }, { token: ctx.admin }),
    ),
    fails('PERMISSION_DENIED', 'a plain user', async (ctx) =>
      ctx.grpc.call(S.create, { metadata: { parentId: (await robot(ctx)).projectId, name: 'x' } }, { token: ctx.reader }),
    ),
  ],
  '/cloud.iam.v1.ServiceAccountService/Update': [
    ok(
      'replaces the description',
      async (ctx) => ctx.grpc.call(S.update, { metadata: { id: (await robot(ctx)).accountId }, spec: { description: 'robot' } }, { token: ctx.admin }),
      complete,
    ),
    fails('INVALID_ARGUMENT', 'a changed parent', async (ctx) =>
      ctx.grpc.call(S.update, { metadata: { id: (await robot(ctx)).accountId, parentId: ctx.project } }, { token: ctx.admin }),
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(S.update, { metadata: { id: 'serviceaccount-0000000000' } }, { token: ctx.admin })),
  ],
  '/cloud.iam.v1.ServiceAccountService/Delete': [
    ok('deletes a service account', async (ctx) => ctx.grpc.call(S.delete, { id: await freshAccount(ctx, 'contract-doomed') }, { token: ctx.admin }), complete),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(S.delete, { id: 'serviceaccount-0000000000' }, { token: ctx.admin })),
    fails('PERMISSION_DENIED', 'a plain user', async (ctx) => ctx.grpc.call(S.delete, { id: (await robot(ctx)).accountId }, { token: ctx.reader })),
  ],

  '/cloud.iam.v1.AuthPublicKeyService/Get': [
    ok(
      'reads a generated key',
      async (ctx) => ctx.grpc.call(K.get, { id: (await robot(ctx)).keyId }, { token: ctx.reader }),
      (key) => assert.match(key.status?.fingerprint ?? '', /^SHA256:/),
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(K.get, { id: 'publickey-0000000000' }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'an empty id', (ctx) => ctx.grpc.call(K.get, {}, { token: ctx.admin })),
  ],
  '/cloud.iam.v1.AuthPublicKeyService/List': [
    ok(
      "lists one account's keys",
      async (ctx) => {
        const r = await robot(ctx);
        return ctx.grpc.call(K.list, { parentId: r.projectId, filter: `service_account_id = "${r.accountId}"` }, { token: ctx.reader });
      },
      (page) => assert.ok(page.items.length >= 1),
    ),
    fails('INVALID_ARGUMENT', 'an unsupported filter', async (ctx) =>
      ctx.grpc.call(K.list, { parentId: (await robot(ctx)).projectId, filter: 'active = true' }, { token: ctx.admin }),
    ),
  ],
  '/cloud.iam.v1.AuthPublicKeyService/Create': [
    ok(
      'uploads an RSA public key',
      async (ctx) => ctx.grpc.call(K.create, { spec: { serviceAccountId: (await robot(ctx)).accountId, data: publicPem() } }, { token: ctx.admin }),
      complete,
    ),
    fails('INVALID_ARGUMENT', 'a private key instead of a public one', async (ctx) =>
      ctx.grpc.call(K.create, { spec: { serviceAccountId: (await robot(ctx)).accountId, data: (await robot(ctx)).privateKey } }, { token: ctx.admin }),
    ),
    fails('NOT_FOUND', 'an unknown service account', (ctx) =>
      ctx.grpc.call(K.create, { spec: { serviceAccountId: 'serviceaccount-0000000000', data: publicPem() } }, { token: ctx.admin }),
    ),
  ],
  '/cloud.iam.v1.AuthPublicKeyService/Generate': [
    ok(
      'generates a key pair and answers the private key once',
      async (ctx) => ctx.grpc.call(K.generate, { spec: { serviceAccountId: (await robot(ctx)).accountId } }, { token: ctx.admin }),
      (answer) => assert.match(answer.privateKey, /^-----BEGIN PRIVATE KEY-----/),
    ),
    fails('INVALID_ARGUMENT', 'no service account', (ctx) => ctx.grpc.call(K.generate, {}, { token: ctx.admin })),
    fails('PERMISSION_DENIED', 'a plain user', async (ctx) =>
      ctx.grpc.call(K.generate, { spec: { serviceAccountId: (await robot(ctx)).accountId } }, { token: ctx.reader }),
    ),
  ],
  '/cloud.iam.v1.AuthPublicKeyService/Activate': [
    ok('activates a key', async (ctx) => ctx.grpc.call(K.activate, { id: await freshKey(ctx) }, { token: ctx.admin }), complete),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(K.activate, { id: 'publickey-0000000000' }, { token: ctx.admin })),
  ],
  '/cloud.iam.v1.AuthPublicKeyService/Deactivate': [
    ok('deactivates a key', async (ctx) => ctx.grpc.call(K.deactivate, { id: await freshKey(ctx) }, { token: ctx.admin }), complete),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(K.deactivate, { id: 'publickey-0000000000' }, { token: ctx.admin })),
  ],
  '/cloud.iam.v1.AuthPublicKeyService/Delete': [
    ok('deletes a key', async (ctx) => ctx.grpc.call(K.delete, { id: await freshKey(ctx) }, { token: ctx.admin }), complete),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(K.delete, { id: 'publickey-0000000000' }, { token: ctx.admin })),
  ],

  '/cloud.iam.v1.ProfileService/Get': [
    ok(
      'anonymous without a token',
      (ctx) => ctx.grpc.call(ProfileService.method.get, {}, NONE),
      (profile) => assert.equal(profile.profile.case, 'anonymousProfile'),
    ),
    ok(
      'the service account with its exchanged token',
      async (ctx) => ctx.grpc.call(ProfileService.method.get, {}, { token: await robotToken(ctx) }),
      (profile) => assert.equal(profile.profile.case, 'serviceAccountProfile'),
    ),
    fails('UNAUTHENTICATED', 'an invalid token', (ctx) => ctx.grpc.call(ProfileService.method.get, {}, { token: 'not-a-token' })),
  ],
  '/cloud.iam.v1.TokenExchangeService/Exchange': [
    ok(
      'a valid JWT buys an access token, without a bearer token',
      async (ctx) => ctx.grpc.call(TokenExchangeService.method.exchange, { ...EXCHANGE, subjectToken: jwtOf(await robot(ctx)) }, NONE),
      (answer) => {
        assert.equal(answer.tokenType, 'Bearer');
        assert.ok(answer.expiresIn > 0n);
      },
    ),
    fails('UNAUTHENTICATED', 'a JWT that lives more than 1 h', async (ctx) =>
      ctx.grpc.call(TokenExchangeService.method.exchange, { ...EXCHANGE, subjectToken: jwtOf(await robot(ctx), 7200) }, NONE),
    ),
    fails('INVALID_ARGUMENT', 'another grant type', async (ctx) =>
      ctx.grpc.call(TokenExchangeService.method.exchange, { ...EXCHANGE, grantType: 'password', subjectToken: jwtOf(await robot(ctx)) }, NONE),
    ),
  ],
};
