import { generateKeyPairSync } from 'node:crypto';
import { status as Code } from '@grpc/grpc-js';
import { ProjectService } from '../../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { ServiceAccountService } from '../../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { AuthPublicKeyService } from '../../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { AuthPublicKeyStatus_Algorithm as Algorithm } from '../../../generated/proto/cloud/iam/v1/auth_public_key_pb.js';
import { ProfileService } from '../../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { TokenExchangeService } from '../../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { expectGrpcError } from '../../support/grpc.js';
import { startCloudServer, startServerOn, waitForOperation, type CloudServer } from '../cloud/fixtures.js';
import {
  accessTokenOf,
  createProject,
  createServiceAccountWithKey,
  exchangeForm,
  exchangeOverHttp,
  exchangeRequest,
  jwtOf,
  type ServiceAccountKey,
} from './support.js';

let cloud: CloudServer;
let projectA: string;
let projectB: string;
let robot: ServiceAccountKey;

beforeAll(async () => {
  cloud = await startCloudServer({ PRINCIPAL_CACHE_MS: '0', IAM_TOKEN_TTL: '2h' });
  projectA = await createProject(cloud.grpc, cloud.admin.token, 'team-a');
  projectB = await createProject(cloud.grpc, cloud.admin.token, 'team-b');
  robot = await createServiceAccountWithKey(cloud.grpc, cloud.admin.token, projectA, 'robot');
});
afterAll(async () => {
  await cloud?.close();
});

const P = ProjectService.method;
const SA = ServiceAccountService.method;
const K = AuthPublicKeyService.method;

describe('projects', () => {
  test('the first start made one tenant and a project named default; another server on the database makes no second one', async () => {
    const tenants = await cloud.server.app.db.knex('iam_tenants').select('id');
    expect(tenants).toHaveLength(1);
    const tenant = tenants[0].id as string;
    expect(tenant).toMatch(/^tenant-[0-9a-f]{20}$/);
    const { message } = await cloud.grpc.call(P.getByName, { parentId: tenant, name: 'default' }, { token: cloud.reader.token });
    expect(message.metadata).toMatchObject({ parentId: tenant, name: 'default' });
    expect(message.metadata?.id).toMatch(/^project-[0-9a-f]{20}$/);
    const second = await startServerOn(cloud.server.app.db);
    await second.close();
    expect(await cloud.server.app.db.knex('iam_tenants').count('* as n').first()).toEqual({ n: 1 });
    expect(await cloud.server.app.db.knex('iam_projects').where({ name: 'default' }).count('* as n').first()).toEqual({ n: 1 });
  });

  test('create returns an operation that is already complete and readable through OperationService', async () => {
    const { message } = await cloud.grpc.call(P.create, { metadata: { name: 'done-at-once' }, spec: { description: 'x' } }, { token: cloud.admin.token });
    expect(message.status?.code).toBe(0);
    expect(message.finishedAt).toBeDefined();
    expect(message.createdBy).toBe(`useraccount-${cloud.admin.id}`);
    const read = await cloud.grpc.call(OperationService.method.get, { id: message.id }, { token: cloud.admin.token });
    expect(read.message.resourceId).toBe(message.resourceId);
  });

  test('names are unique under the tenant', async () => {
    const error = await expectGrpcError(cloud.grpc.call(P.create, { metadata: { name: 'team-a' } }, { token: cloud.admin.token }));
    expect(error.code).toBe(Code.ALREADY_EXISTS);
    expect(error.serviceError?.details).toMatchObject({ case: 'resourceAlreadyExists', value: { resourceId: projectA } });
  });

  test('a parent other than the tenant is NOT_FOUND, a malformed one INVALID_ARGUMENT', async () => {
    const missing = await expectGrpcError(cloud.grpc.call(P.create, { metadata: { parentId: 'tenant-other', name: 'x' } }, { token: cloud.admin.token }));
    expect(missing.code).toBe(Code.NOT_FOUND);
    const malformed = await expectGrpcError(cloud.grpc.call(P.create, { metadata: { parentId: projectA, name: 'x' } }, { token: cloud.admin.token }));
    expect(malformed.code).toBe(Code.INVALID_ARGUMENT);
  });

  test("list pages through the tenant's projects", async () => {
    const { message: project } = await cloud.grpc.call(P.get, { id: projectA }, { token: cloud.reader.token });
    const tenant = project.metadata?.parentId ?? '';
    const first = await cloud.grpc.call(P.list, { parentId: tenant, pageSize: 2n }, { token: cloud.reader.token });
    expect(first.message.items).toHaveLength(2);
    const rest = await cloud.grpc.call(P.list, { parentId: tenant, pageSize: 1000n, pageToken: first.message.nextPageToken }, { token: cloud.reader.token });
    const names = [...first.message.items, ...rest.message.items].map((item) => item.metadata?.name);
    expect(names).toEqual(expect.arrayContaining(['default', 'team-a', 'team-b']));
    expect(new Set(names).size).toBe(names.length);
  });

  test('update replaces the spec under the reset mask and checks resource_version', async () => {
    const id = await createProject(cloud.grpc, cloud.admin.token, 'renamed-later');
    await cloud.grpc.call(P.update, { metadata: { id }, spec: { description: 'first' } }, { token: cloud.admin.token });
    const { message: operation } = await cloud.grpc.call(
      P.update,
      { metadata: { id, name: 'renamed' } },
      { token: cloud.admin.token, headers: { 'x-resetmask': 'spec.description' } },
    );
    expect(operation.status?.code).toBe(0);
    expect(operation.requestHeaders['x-resetmask']?.values).toEqual(['spec.description']);
    const { message } = await cloud.grpc.call(P.get, { id }, { token: cloud.admin.token });
    expect(message.metadata).toMatchObject({ name: 'renamed', resourceVersion: 3n });
    // `spec.description` named while `spec` is absent resets `spec` entirely (docs/cloud-api.md, "Update with a reset mask").
    expect(message.spec?.description ?? '').toBe('');
    const stale = await expectGrpcError(cloud.grpc.call(P.update, { metadata: { id, resourceVersion: 2n } }, { token: cloud.admin.token }));
    expect(stale.code).toBe(Code.ABORTED);
    expect(stale.serviceError?.details.case).toBe('resourceConflict');
    const immutable = await expectGrpcError(cloud.grpc.call(P.update, { metadata: { id, parentId: 'tenant-else' } }, { token: cloud.admin.token }));
    expect(immutable.code).toBe(Code.INVALID_ARGUMENT);
  });

  test('a project holding service accounts cannot be deleted; an empty one can', async () => {
    const held = await expectGrpcError(cloud.grpc.call(P.delete, { id: projectA }, { token: cloud.admin.token }));
    expect(held.code).toBe(Code.FAILED_PRECONDITION);
    const empty = await createProject(cloud.grpc, cloud.admin.token, 'short-lived');
    const { message } = await cloud.grpc.call(P.delete, { id: empty }, { token: cloud.admin.token });
    expect(message.status?.code).toBe(0);
    expect((await expectGrpcError(cloud.grpc.call(P.get, { id: empty }, { token: cloud.admin.token }))).code).toBe(Code.NOT_FOUND);
  });

  test('instances need an existing project', async () => {
    const error = await expectGrpcError(
      cloud.grpc.call(InstanceService.method.create, { metadata: { parentId: 'project-nowhere', name: 'vm' } }, { token: cloud.admin.token }),
    );
    expect(error.code).toBe(Code.NOT_FOUND);
    expect(error.serviceError?.details).toMatchObject({ case: 'resourceNotFound', value: { resourceId: 'project-nowhere' } });
  });
});

describe('service accounts and keys', () => {
  test('service account names are unique per project, not across projects', async () => {
    const again = await expectGrpcError(cloud.grpc.call(SA.create, { metadata: { parentId: projectA, name: 'robot' } }, { token: cloud.admin.token }));
    expect(again.code).toBe(Code.ALREADY_EXISTS);
    const { message } = await cloud.grpc.call(SA.create, { metadata: { parentId: projectB, name: 'robot' } }, { token: cloud.admin.token });
    expect(message.status?.code).toBe(0);
    const { message: account } = await cloud.grpc.call(SA.getByName, { parentId: projectB, name: 'robot' }, { token: cloud.admin.token });
    expect(account.metadata?.id).toMatch(/^serviceaccount-[0-9a-f]{20}$/);
    expect(account.status?.active).toBe(true);
  });

  test('a service account in a project that does not exist is NOT_FOUND', async () => {
    const error = await expectGrpcError(cloud.grpc.call(SA.create, { metadata: { parentId: 'project-nowhere', name: 'x' } }, { token: cloud.admin.token }));
    expect(error.code).toBe(Code.NOT_FOUND);
  });

  test("a generated key is RSA 2048, active, fingerprinted, lives in the account's project; the private key is PKCS#8 PEM", async () => {
    const { message } = await cloud.grpc.call(K.get, { id: robot.keyId }, { token: cloud.reader.token });
    expect(message.metadata?.parentId).toBe(projectA);
    expect(message.spec?.serviceAccountId).toBe(robot.serviceAccountId);
    expect(message.spec?.data).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    expect(message.status).toMatchObject({ active: true, algorithm: Algorithm.RSA_2048 });
    expect(message.status?.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(robot.privateKey).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(JSON.stringify(message, (_key, value: unknown) => (typeof value === 'bigint' ? String(value) : value))).not.toContain('PRIVATE KEY');
  });

  test('an uploaded RSA public key is stored once per account; private, EC and short keys are refused', async () => {
    const pair = generateKeyPairSync('rsa', { modulusLength: 3072 });
    const data = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const { message: operation } = await cloud.grpc.call(
      K.create,
      { spec: { serviceAccountId: robot.serviceAccountId, data, description: 'laptop' } },
      { token: cloud.admin.token },
    );
    expect(operation.status?.code).toBe(0);
    const { message: key } = await cloud.grpc.call(K.get, { id: operation.resourceId }, { token: cloud.admin.token });
    expect(key.status?.algorithm).toBe(Algorithm.RSA_3072);
    expect(
      (await expectGrpcError(cloud.grpc.call(K.create, { spec: { serviceAccountId: robot.serviceAccountId, data } }, { token: cloud.admin.token }))).code,
    ).toBe(Code.ALREADY_EXISTS);
    const refused: Array<[string, string]> = [
      [pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), 'private key'],
      [generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }).toString(), 'RSA'],
      [generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' }).toString(), '2048'],
      ['-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----', 'readable'],
      ['ssh-rsa AAAA', 'PEM'],
    ];
    for (const [pem, reason] of refused) {
      const error = await expectGrpcError(
        cloud.grpc.call(K.create, { spec: { serviceAccountId: robot.serviceAccountId, data: pem } }, { token: cloud.admin.token }),
      );
      expect(error.code).toBe(Code.INVALID_ARGUMENT);
      expect(error.details).toContain(reason);
      expect(error.serviceError?.details).toMatchObject({ case: 'badRequest', value: { violations: [{ field: 'spec.data' }] } });
    }
    const mismatch = await expectGrpcError(
      cloud.grpc.call(K.create, { metadata: { parentId: projectB }, spec: { serviceAccountId: robot.serviceAccountId, data } }, { token: cloud.admin.token }),
    );
    expect(mismatch.code).toBe(Code.INVALID_ARGUMENT);
  });

  test('keys are listed per project and filtered per account', async () => {
    const all = await cloud.grpc.call(K.list, { parentId: projectA }, { token: cloud.reader.token });
    expect(all.message.items.length).toBeGreaterThanOrEqual(1);
    const mine = await cloud.grpc.call(
      K.list,
      { parentId: projectA, filter: `service_account_id = "${robot.serviceAccountId}"` },
      { token: cloud.reader.token },
    );
    expect(mine.message.items.every((key) => key.spec?.serviceAccountId === robot.serviceAccountId)).toBe(true);
    const none = await cloud.grpc.call(K.list, { parentId: projectA, filter: 'service_account_id = "serviceaccount-none"' }, { token: cloud.reader.token });
    expect(none.message.items).toHaveLength(0);
    expect((await expectGrpcError(cloud.grpc.call(K.list, { parentId: projectA, filter: 'active = true' }, { token: cloud.reader.token }))).code).toBe(
      Code.INVALID_ARGUMENT,
    );
  });

  test('a deactivated key signs no exchange until activated again; a deleted key never again', async () => {
    const key = await createServiceAccountWithKey(cloud.grpc, cloud.admin.token, projectA, 'switch');
    const deactivated = await cloud.grpc.call(K.deactivate, { id: key.keyId }, { token: cloud.admin.token });
    expect(deactivated.message.status?.code).toBe(0);
    expect((await cloud.grpc.call(K.get, { id: key.keyId }, { token: cloud.admin.token })).message.status?.active).toBe(false);
    expect((await expectGrpcError(cloud.grpc.call(TokenExchangeService.method.exchange, exchangeRequest(jwtOf(key))))).code).toBe(Code.UNAUTHENTICATED);
    await cloud.grpc.call(K.activate, { id: key.keyId }, { token: cloud.admin.token });
    await expect(accessTokenOf(cloud.grpc, key)).resolves.toMatch(/\./);
    await cloud.grpc.call(K.delete, { id: key.keyId }, { token: cloud.admin.token });
    expect((await expectGrpcError(cloud.grpc.call(TokenExchangeService.method.exchange, exchangeRequest(jwtOf(key))))).code).toBe(Code.UNAUTHENTICATED);
    expect((await expectGrpcError(cloud.grpc.call(K.get, { id: key.keyId }, { token: cloud.admin.token }))).code).toBe(Code.NOT_FOUND);
  });
});

describe('token exchange and profiles', () => {
  test('over gRPC, a valid JWT buys a Bearer token for IAM_TOKEN_TTL that ProfileService knows as the service account', async () => {
    const { message } = await cloud.grpc.call(TokenExchangeService.method.exchange, exchangeRequest(jwtOf(robot)));
    expect(message).toMatchObject({ issuedTokenType: 'urn:ietf:params:oauth:token-type:access_token', tokenType: 'Bearer', expiresIn: 7200n });
    const { message: profile } = await cloud.grpc.call(ProfileService.method.get, {}, { token: message.accessToken });
    expect(profile.profile.case).toBe('serviceAccountProfile');
    const info = profile.profile.case === 'serviceAccountProfile' ? profile.profile.value.info : undefined;
    expect(info?.metadata).toMatchObject({ id: robot.serviceAccountId, parentId: projectA, name: 'robot' });
    expect(info?.status?.active).toBe(true);
  });

  test('over HTTP, the same exchange answers RFC 8693 JSON that is never cached', async () => {
    const response = await exchangeOverHttp(cloud.server.url, exchangeForm(jwtOf(robot)));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-request-id')).toBeTruthy();
    expect(response.body).toEqual({
      access_token: expect.any(String),
      issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      token_type: 'Bearer',
      expires_in: 7200,
    });
    const { message } = await cloud.grpc.call(ProfileService.method.get, {}, { token: response.body.access_token as string });
    expect(message.profile.case).toBe('serviceAccountProfile');
  });

  const HTTP_ERRORS: Array<
    [string, { given: () => { form: Record<string, string> | string; contentType?: string }; want: { status: number; error: string } }]
  > = [
    [
      'a JSON body',
      { given: () => ({ form: JSON.stringify(exchangeForm(jwtOf(robot))), contentType: 'application/json' }), want: { status: 400, error: 'invalid_request' } },
    ],
    ['a broken percent escape', { given: () => ({ form: 'grant_type=%zz' }), want: { status: 400, error: 'invalid_request' } }],
    ['no grant_type', { given: () => ({ form: { ...exchangeForm(jwtOf(robot)), grant_type: '' } }), want: { status: 400, error: 'invalid_request' } }],
    [
      'another grant type',
      { given: () => ({ form: { ...exchangeForm(jwtOf(robot)), grant_type: 'client_credentials' } }), want: { status: 400, error: 'unsupported_grant_type' } },
    ],
    ['no subject_token', { given: () => ({ form: { ...exchangeForm(''), subject_token: '' } }), want: { status: 400, error: 'invalid_request' } }],
    [
      'another subject token type',
      {
        given: () => ({ form: { ...exchangeForm(jwtOf(robot)), subject_token_type: 'urn:ietf:params:oauth:token-type:id_token' } }),
        want: { status: 400, error: 'invalid_request' },
      },
    ],
    [
      'another requested token type',
      {
        given: () => ({ form: { ...exchangeForm(jwtOf(robot)), requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' } }),
        want: { status: 400, error: 'invalid_request' },
      },
    ],
    [
      'an actor token',
      {
        given: () => ({ form: { ...exchangeForm(jwtOf(robot)), actor_token: 'x', actor_token_type: 'urn:ietf:params:oauth:token-type:jwt' } }),
        want: { status: 400, error: 'invalid_request' },
      },
    ],
    [
      'a repeated parameter',
      {
        given: () => ({ form: `${new URLSearchParams(exchangeForm(jwtOf(robot))).toString()}&grant_type=x` }),
        want: { status: 400, error: 'invalid_request' },
      },
    ],
    ['a garbage JWT', { given: () => ({ form: exchangeForm('not.a.jwt') }), want: { status: 400, error: 'invalid_grant' } }],
    [
      'a JWT of the wrong key',
      { given: () => ({ form: exchangeForm(jwtOf({ ...robot, keyId: 'publickey-00000000000000000000' })) }), want: { status: 400, error: 'invalid_grant' } },
    ],
    ['a JWT that lives 2 h', { given: () => ({ form: exchangeForm(jwtOf(robot, 7200)) }), want: { status: 400, error: 'invalid_grant' } }],
    ['an expired JWT', { given: () => ({ form: exchangeForm(jwtOf(robot, -600)) }), want: { status: 400, error: 'invalid_grant' } }],
  ];

  test.each(HTTP_ERRORS)('over HTTP, %s is refused with an RFC 6749 error body', async (_name, { given, want }) => {
    const { form, contentType } = given();
    const response = await exchangeOverHttp(cloud.server.url, form, contentType);
    expect(response.status).toBe(want.status);
    expect(response.body).toEqual({ error: want.error, error_description: expect.any(String) });
  });

  test('over HTTP, methods other than POST answer 405', async () => {
    const response = await fetch(`${cloud.server.url}/oauth2/token/exchange`);
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
  });

  test('over gRPC, a bad JWT is UNAUTHENTICATED and a malformed request INVALID_ARGUMENT, with no bearer token needed', async () => {
    const bad = await expectGrpcError(cloud.grpc.call(TokenExchangeService.method.exchange, exchangeRequest(jwtOf(robot, 7200))));
    expect(bad.code).toBe(Code.UNAUTHENTICATED);
    expect(bad.serviceError?.service).toBe('tokens.iam');
    const grant = await expectGrpcError(cloud.grpc.call(TokenExchangeService.method.exchange, { ...exchangeRequest(jwtOf(robot)), grantType: 'password' }));
    expect(grant.code).toBe(Code.INVALID_ARGUMENT);
    expect(grant.serviceError?.details).toMatchObject({ case: 'badRequest', value: { violations: [{ field: 'grant_type' }] } });
  });

  test('ProfileService answers anonymous without a token, UNAUTHENTICATED for a bad one, the user for a user token', async () => {
    const anonymous = await cloud.grpc.call(ProfileService.method.get, {});
    expect(anonymous.message.profile.case).toBe('anonymousProfile');
    expect((await expectGrpcError(cloud.grpc.call(ProfileService.method.get, {}, { token: 'not-a-token' }))).code).toBe(Code.UNAUTHENTICATED);
    const user = await cloud.grpc.call(ProfileService.method.get, {}, { token: cloud.reader.token });
    expect(user.message.profile).toMatchObject({
      case: 'userProfile',
      value: { id: `useraccount-${cloud.reader.id}`, attributes: { name: 'reader', is_admin: false } },
    });
  });

  test('a service account token creates instances in its project and is refused in another', async () => {
    const token = await accessTokenOf(cloud.grpc, robot);
    const { message: operation } = await cloud.grpc.call(InstanceService.method.create, { metadata: { parentId: projectA, name: 'robot-vm' } }, { token });
    expect(operation.createdBy).toBe(robot.serviceAccountId);
    const done = await waitForOperation(cloud.grpc, token, operation.id);
    expect(done.status?.code).toBe(0);
    const refused = await expectGrpcError(cloud.grpc.call(InstanceService.method.create, { metadata: { parentId: projectB, name: 'robot-vm' } }, { token }));
    expect(refused.code).toBe(Code.PERMISSION_DENIED);
    expect(refused.serviceError?.details).toMatchObject({ case: 'permissionDenied', value: { resourceId: projectB } });
    await waitForOperation(cloud.grpc, token, (await cloud.grpc.call(InstanceService.method.delete, { id: operation.resourceId }, { token })).message.id);
  });

  test('an inactive or deleted account can neither exchange nor use the tokens it already has', async () => {
    const key = await createServiceAccountWithKey(cloud.grpc, cloud.admin.token, projectB, 'doomed');
    const token = await accessTokenOf(cloud.grpc, key);
    // No RPC deactivates an account (contracts/proto/cloud/iam/v1); the service's operator switch does.
    const { ServiceAccountService: Accounts } = await import('../../../src/services/iam/service-account-service.js');
    const { Operations } = await import('../../../src/engines/operations/index.js');
    const accounts = new Accounts(cloud.server.app.db.knex, new Operations(cloud.server.app.db.knex), async () => true);
    await accounts.setActive(key.serviceAccountId, false);
    expect((await expectGrpcError(cloud.grpc.call(ProfileService.method.get, {}, { token }))).code).toBe(Code.UNAUTHENTICATED);
    expect((await exchangeOverHttp(cloud.server.url, exchangeForm(jwtOf(key)))).body.error).toBe('invalid_grant');
    await accounts.setActive(key.serviceAccountId, true);
    expect((await cloud.grpc.call(ProfileService.method.get, {}, { token })).message.profile.case).toBe('serviceAccountProfile');
    await cloud.grpc.call(SA.delete, { id: key.serviceAccountId }, { token: cloud.admin.token });
    expect((await expectGrpcError(cloud.grpc.call(ProfileService.method.get, {}, { token }))).code).toBe(Code.UNAUTHENTICATED);
    expect((await exchangeOverHttp(cloud.server.url, exchangeForm(jwtOf(key)))).status).toBe(400);
  });
});
