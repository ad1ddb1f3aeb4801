import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { DescMessage, DescMethodUnary, DescService, MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { OperationSchema } from '../../../generated/proto/cloud/common/v1/operation_pb.js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { AuthPublicKeyService } from '../../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { ProjectService } from '../../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { ServiceAccountService } from '../../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { expectGrpcError } from '../../support/grpc.js';
import { createProject } from '../iam/support.js';
import { createInstance, startCloudServer, waitForOperation, type CloudServer } from './fixtures.js';

// Issue 30: every mutating RPC of every cloud service honours X-Idempotency-Key — the same key and
// body twice answer the first answer and the work runs once; the same key with another body is
// refused (INVALID_ARGUMENT, the server's conflict error for a reused key). AuthPublicKeyService.Generate,
// which answers its key pair rather than an Operation, made a second key for the same key before.

let cloud: CloudServer;
let projectId: string;
beforeAll(async () => {
  cloud = await startCloudServer({ COMPUTE_WORK_MS: '20' });
  projectId = await createProject(cloud.grpc, cloud.admin.token, 'idem-every');
});
afterAll(() => cloud?.close());

const token = () => cloud.admin.token;
let counter = 0;
const unique = (prefix: string) => `${prefix}-${++counter}`;

async function call<I extends DescMessage, O extends DescMessage>(method: DescMethodUnary<I, O>, request: MessageInitShape<I> | object, key?: string) {
  const sent = request as MessageInitShape<I>;
  return (await cloud.grpc.call(method, sent, { token: token(), headers: key ? { 'x-idempotency-key': key } : {} })).message as MessageShape<O>;
}

async function serviceAccount(): Promise<string> {
  const operation = await call(ServiceAccountService.method.create, { metadata: { parentId: projectId, name: unique('sa') } });
  return operation.resourceId;
}

async function publicKey(): Promise<string> {
  const generated = await call(AuthPublicKeyService.method.generate, { spec: { serviceAccountId: await serviceAccount() } });
  return generated.key?.metadata?.id ?? '';
}

const pem = () => generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();

/** The method, and a request and another request to it (made fresh for each row). */
interface Row {
  method: DescMethodUnary<DescMessage, DescMessage>;
  requests(): Promise<[object, object]>;
}

const row = <I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  requests: () => Promise<[MessageInitShape<I>, MessageInitShape<I>]>,
): Row => ({ method, requests }) as unknown as Row;

const instanceId = async () => (await createInstance(cloud, unique('vm'), {}, projectId)).metadata?.id ?? '';
const stoppedInstanceId = async () => {
  const id = await instanceId();
  await waitForOperation(cloud.grpc, token(), (await call(InstanceService.method.stop, { id })).id);
  return id;
};

const ROWS: Row[] = [
  row(InstanceService.method.create, async () => [
    { metadata: { parentId: projectId, name: unique('new-vm') } },
    { metadata: { parentId: projectId, name: unique('new-vm') } },
  ]),
  row(InstanceService.method.update, async () => {
    const id = await instanceId();
    return [
      { metadata: { id }, spec: { description: 'one' } },
      { metadata: { id }, spec: { description: 'two' } },
    ];
  }),
  row(InstanceService.method.delete, async () => [{ id: await instanceId() }, { id: await instanceId() }]),
  row(InstanceService.method.start, async () => [{ id: await stoppedInstanceId() }, { id: await stoppedInstanceId() }]),
  row(InstanceService.method.stop, async () => [{ id: await instanceId() }, { id: await instanceId() }]),
  row(ProjectService.method.create, async () => [{ metadata: { name: unique('p') } }, { metadata: { name: unique('p') } }]),
  row(ProjectService.method.update, async () => {
    const id = await createProject(cloud.grpc, token(), unique('p'));
    return [{ metadata: { id, labels: { a: '1' } } }, { metadata: { id, labels: { a: '2' } } }];
  }),
  row(ProjectService.method.delete, async () => [
    { id: await createProject(cloud.grpc, token(), unique('p')) },
    { id: await createProject(cloud.grpc, token(), unique('p')) },
  ]),
  row(ServiceAccountService.method.create, async () => [
    { metadata: { parentId: projectId, name: unique('sa') } },
    { metadata: { parentId: projectId, name: unique('sa') } },
  ]),
  row(ServiceAccountService.method.update, async () => {
    const id = await serviceAccount();
    return [
      { metadata: { id }, spec: { description: 'one' } },
      { metadata: { id }, spec: { description: 'two' } },
    ];
  }),
  row(ServiceAccountService.method.delete, async () => [{ id: await serviceAccount() }, { id: await serviceAccount() }]),
  row(AuthPublicKeyService.method.create, async () => {
    const serviceAccountId = await serviceAccount();
    return [{ spec: { serviceAccountId, data: pem() } }, { spec: { serviceAccountId, data: pem() } }];
  }),
  row(AuthPublicKeyService.method.generate, async () => {
    const serviceAccountId = await serviceAccount();
    return [{ spec: { serviceAccountId, description: 'one' } }, { spec: { serviceAccountId, description: 'two' } }];
  }),
  row(AuthPublicKeyService.method.activate, async () => [{ id: await publicKey() }, { id: await publicKey() }]),
  row(AuthPublicKeyService.method.deactivate, async () => [{ id: await publicKey() }, { id: await publicKey() }]),
  row(AuthPublicKeyService.method.delete, async () => [{ id: await publicKey() }, { id: await publicKey() }]),
];

const SERVICES: DescService[] = [InstanceService, ProjectService, ServiceAccountService, AuthPublicKeyService];
const READ = /^(Get|List)/;

test('the table has a row for every mutating method of every resource service', () => {
  const mutating = SERVICES.flatMap((service) =>
    service.methods.filter((method) => !READ.test(method.name)).map((method) => `${service.typeName}.${method.name}`),
  );
  expect(ROWS.map(({ method }) => `${method.parent.typeName}.${method.name}`).sort()).toEqual(mutating.sort());
});

/** What identifies an answer: the Operation's id, or (Generate) the key's id and its private key. */
function identity(message: object): string {
  const value = message as { $typeName: string; id?: string; key?: { metadata?: { id: string } }; privateKey?: string };
  if (value.$typeName === OperationSchema.typeName) return `operation ${value.id}`;
  return `key ${value.key?.metadata?.id} ${value.privateKey}`;
}

test.each(ROWS.map((each) => [`${each.method.parent.name}.${each.method.name}`, each] as const))(
  '%s: the same key and body answer the first answer; the same key with another body is INVALID_ARGUMENT',
  async (_name, { method, requests }) => {
    const [request, other] = await requests();
    const key = randomUUID();
    const first = await call(method, request, key);
    const again = await call(method, request, key);
    expect(identity(again)).toBe(identity(first));
    const operationId = first.$typeName === OperationSchema.typeName ? (first as unknown as { id: string }).id : '';
    if (operationId) expect((await waitForOperation(cloud.grpc, token(), operationId)).status?.code).toBe(0);
    const afterwards = await call(method, request, key);
    expect(identity(afterwards)).toBe(identity(first));
    const refused = await expectGrpcError(call(method, other, key));
    expect(refused.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(refused.serviceError?.details.value).toMatchObject({ violations: [{ field: 'x-idempotency-key' }] });
  },
);

test('Generate twice with one key leaves one new key on the account, and its private key is not stored in the clear', async () => {
  const serviceAccountId = await serviceAccount();
  const key = randomUUID();
  const answers = await Promise.all([1, 2, 3].map(() => call(AuthPublicKeyService.method.generate, { spec: { serviceAccountId } }, key)));
  expect(new Set(answers.map(identity)).size).toBe(1);
  const listed = await call(AuthPublicKeyService.method.list, { parentId: projectId, filter: `service_account_id = "${serviceAccountId}"` });
  expect(listed.items).toHaveLength(1);
  const rows = (await cloud.server.app.db
    .knex('idempotency_keys')
    .select('key', 'answer')
    .where({ method: '/cloud.iam.v1.AuthPublicKeyService/Generate' })) as Array<{
    key: string;
    answer: Uint8Array;
  }>;
  // The row keeps the key as a hash and the answer sealed under it: no private key in the clear.
  expect(rows.some((stored) => stored.key === key)).toBe(false);
  for (const stored of rows) expect(Buffer.from(stored.answer).toString('latin1')).not.toContain('PRIVATE KEY');
});
