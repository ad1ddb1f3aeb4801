import { status as GrpcStatus } from '@grpc/grpc-js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { expectGrpcError } from '../../support/grpc.js';
import { createAccount } from '../users/users-fixtures.js';
import { createInstance, startCloudServer, waitForOperation, type CloudServer } from './fixtures.js';

let cloud: CloudServer;
beforeAll(async () => {
  cloud = await startCloudServer({ COMPUTE_WORK_MS: '50' });
});
afterAll(() => cloud?.close());

const M = InstanceService.method;

test('20 concurrent creates with one key make one operation and one instance', async () => {
  const parentId = 'project-idem';
  const key = '7f9c2ba4-e88f-4c1a-9d0b-1b2c3d4e5f60';
  const request = { metadata: { parentId, name: 'idem-vm' }, spec: { description: 'once' } };
  const answers = await Promise.all(
    Array.from({ length: 20 }, () => cloud.grpc.call(M.create, request, { token: cloud.admin.token, headers: { 'x-idempotency-key': key } })),
  );
  const ids = new Set(answers.map((answer) => answer.message.id));
  expect(ids.size).toBe(1);
  const { message: list } = await cloud.grpc.call(M.list, { parentId }, { token: cloud.admin.token });
  expect(list.items).toHaveLength(1);
  const { message: operations } = await cloud.grpc.call(M.listOperationsByParent, { parentId }, { token: cloud.admin.token });
  expect(operations.operations).toHaveLength(1);
  // A retry after completion answers the same operation in its current (finished) state.
  const [id] = ids;
  await waitForOperation(cloud.grpc, cloud.admin.token, id ?? '');
  const retry = await cloud.grpc.call(M.create, request, { token: cloud.admin.token, headers: { 'x-idempotency-key': key } });
  expect(retry.message.id).toBe(id);
  expect(retry.message.status?.code).toBe(0);
  expect(retry.headers.get('x-idempotent-replay')).toEqual(['true']);
});

test('the same key with a different request is INVALID_ARGUMENT', async () => {
  const key = 'reuse-key-000000000000001';
  await cloud.grpc.call(M.create, { metadata: { parentId: 'project-idem2', name: 'a' } }, { token: cloud.admin.token, headers: { 'x-idempotency-key': key } });
  const error = await expectGrpcError(
    cloud.grpc.call(M.create, { metadata: { parentId: 'project-idem2', name: 'b' } }, { token: cloud.admin.token, headers: { 'x-idempotency-key': key } }),
  );
  expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
  expect(error.serviceError?.details.value).toMatchObject({ violations: [{ field: 'x-idempotency-key' }] });
});

test('a key is scoped to its method and principal; a failed first request does not hold the key', async () => {
  const key = 'scoped-key-00000000000001';
  const instance = await createInstance(cloud, 'scope-vm', {}, 'project-idem3');
  const id = instance.metadata?.id ?? '';
  const stop = await cloud.grpc.call(M.stop, { id }, { token: cloud.admin.token, headers: { 'x-idempotency-key': key } });
  await waitForOperation(cloud.grpc, cloud.admin.token, stop.message.id);
  // Same key on another method is a new request.
  const start = await cloud.grpc.call(M.start, { id }, { token: cloud.admin.token, headers: { 'x-idempotency-key': key } });
  expect(start.message.id).not.toBe(stop.message.id);
  await waitForOperation(cloud.grpc, cloud.admin.token, start.message.id);
  // Another admin with the same key on the same method is another request too.
  const other = await createAccount(cloud.server, cloud.admin, 'other-admin', { isAdmin: true });
  const otherStop = await cloud.grpc.call(M.stop, { id }, { token: other.token, headers: { 'x-idempotency-key': key } });
  expect(otherStop.message.id).not.toBe(stop.message.id);
  await waitForOperation(cloud.grpc, cloud.admin.token, otherStop.message.id);
  // A failing request (stopping a stopped instance) releases its key: after a start, the retry runs.
  const failKey = 'failing-key-0000000000001';
  const failed = await expectGrpcError(cloud.grpc.call(M.stop, { id }, { token: cloud.admin.token, headers: { 'x-idempotency-key': failKey } }));
  expect(failed.code).toBe(GrpcStatus.FAILED_PRECONDITION);
  const restart = await cloud.grpc.call(M.start, { id }, { token: cloud.admin.token });
  await waitForOperation(cloud.grpc, cloud.admin.token, restart.message.id);
  const retried = await cloud.grpc.call(M.stop, { id }, { token: cloud.admin.token, headers: { 'x-idempotency-key': failKey } });
  expect(retried.message.status).toBeUndefined();
});

test('reads ignore the header, even a malformed one', async () => {
  const headers = { 'x-idempotency-key': 'bad key!' };
  const list = await cloud.grpc.call(M.list, { parentId: 'project-idem' }, { token: cloud.admin.token, headers });
  expect(list.message.items.length).toBeGreaterThan(0);
  const ops = await cloud.grpc.call(
    OperationService.method.list,
    { resourceId: list.message.items[0]?.metadata?.id ?? '' },
    { token: cloud.admin.token, headers },
  );
  expect(ops.message.operations.length).toBeGreaterThan(0);
});
