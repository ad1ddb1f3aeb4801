import { status as GrpcStatus } from '@grpc/grpc-js';
import { create, toBinary } from '@bufbuild/protobuf';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { ServiceError_RetryType as RetryType } from '../../../generated/proto/cloud/common/v1/error_pb.js';
import { GrpcTestClient, expectGrpcError } from '../../support/grpc.js';
import { createInstance, PROJECT, startCloudServer, waitForOperation, type CloudServer } from './fixtures.js';

let cloud: CloudServer;
beforeAll(async () => {
  cloud = await startCloudServer({ QUOTA_INSTANCES_PER_PROJECT: '2', COMPUTE_WORK_MS: '150' });
});
afterAll(() => cloud?.close());

const M = InstanceService.method;

test('a call without a token, with a malformed one or with a token of no user is UNAUTHENTICATED', async () => {
  for (const token of [undefined, 'not-a-jwt', 'a.b.c']) {
    const error = await expectGrpcError(cloud.grpc.call(M.list, { parentId: PROJECT }, token === undefined ? {} : { token }));
    expect(error.code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect(error.serviceError?.service).toBe('compute');
    expect(error.metadata.get('x-request-id')[0]).toBeTruthy();
  }
  const scheme = await expectGrpcError(cloud.grpc.call(M.list, { parentId: PROJECT }, { headers: { authorization: `Basic ${cloud.admin.token}` } }));
  expect(scheme.code).toBe(GrpcStatus.UNAUTHENTICATED);
});

test('a non-admin user may read but every mutation is PERMISSION_DENIED with a permission_denied detail', async () => {
  const instance = await createInstance(cloud, 'perm-vm', {}, 'project-perm');
  const id = instance.metadata?.id ?? '';
  const token = cloud.reader.token;
  expect((await cloud.grpc.call(M.get, { id }, { token })).message.metadata?.id).toBe(id);
  const attempts = [
    () => cloud.grpc.call(M.create, { metadata: { parentId: 'project-perm', name: 'x' } }, { token }),
    () => cloud.grpc.call(M.update, { metadata: { id }, spec: { description: 'x' } }, { token }),
    () => cloud.grpc.call(M.delete, { id }, { token }),
    () => cloud.grpc.call(M.start, { id }, { token }),
    () => cloud.grpc.call(M.stop, { id }, { token }),
  ];
  for (const attempt of attempts) {
    const error = await expectGrpcError(attempt());
    expect(error.code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect(error.serviceError?.details.case).toBe('permissionDenied');
    expect(error.serviceError?.details.value).toMatchObject({ resourceId: 'project-perm' });
  }
});

test('unknown ids are NOT_FOUND with a resource_not_found detail naming the id', async () => {
  const token = cloud.admin.token;
  for (const call of [
    () => cloud.grpc.call(M.get, { id: 'instance-nope' }, { token }),
    () => cloud.grpc.call(M.getByName, { parentId: PROJECT, name: 'nope' }, { token }),
    () => cloud.grpc.call(M.update, { metadata: { id: 'instance-nope' } }, { token }),
    () => cloud.grpc.call(M.delete, { id: 'instance-nope' }, { token }),
    () => cloud.grpc.call(M.start, { id: 'instance-nope' }, { token }),
    () => cloud.grpc.call(M.stop, { id: 'instance-nope' }, { token }),
    () => cloud.grpc.call(OperationService.method.get, { id: 'operation-nope' }, { token }),
  ]) {
    const error = await expectGrpcError(call());
    expect(error.code).toBe(GrpcStatus.NOT_FOUND);
    expect(error.serviceError?.details.case).toBe('resourceNotFound');
    expect(error.serviceError?.retryType).toBe(RetryType.NOTHING);
  }
});

test('missing and malformed fields are INVALID_ARGUMENT with violations naming the field path', async () => {
  const token = cloud.admin.token;
  const cases: Array<[() => Promise<unknown>, string[]]> = [
    [() => cloud.grpc.call(M.create, { metadata: {} }, { token }), ['metadata.parent_id', 'metadata.name']],
    [() => cloud.grpc.call(M.create, { metadata: { parentId: 'folder-1', name: 'x' } }, { token }), ['metadata.parent_id']],
    [
      () => cloud.grpc.call(M.create, { metadata: { parentId: PROJECT, name: 'x' }, spec: { ports: { ssh: { port: 70000 } } } }, { token }),
      ['spec.ports.ssh.port'],
    ],
    [() => cloud.grpc.call(M.get, {}, { token }), ['id']],
    [() => cloud.grpc.call(M.update, { spec: {} }, { token }), ['metadata.id']],
    [() => cloud.grpc.call(M.list, { parentId: PROJECT, pageSize: -1n }, { token }), ['page_size']],
    [() => cloud.grpc.call(M.list, { parentId: PROJECT, pageToken: 'garbage' }, { token }), ['page_token']],
    [() => cloud.grpc.call(M.list, { parentId: PROJECT, filter: 'name = "x"' }, { token }), ['filter']],
    [() => cloud.grpc.call(OperationService.method.list, {}, { token }), ['resource_id']],
    [
      () => cloud.grpc.call(M.create, { metadata: { parentId: PROJECT, name: 'k' } }, { token, headers: { 'x-idempotency-key': 'short' } }),
      ['x-idempotency-key'],
    ],
    [
      () =>
        cloud.grpc.call(M.create, { metadata: { parentId: PROJECT, name: 'k' } }, { token, headers: { 'x-idempotency-key': 'has_underscore_and_more_chars' } }),
      ['x-idempotency-key'],
    ],
  ];
  for (const [call, fields] of cases) {
    const error = await expectGrpcError(call());
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(error.serviceError?.details.case).toBe('badRequest');
    const violations = error.serviceError?.details.case === 'badRequest' ? error.serviceError.details.value.violations : [];
    expect(violations.map((violation) => violation.field)).toEqual(fields);
  }
});

test('a malformed reset mask is INVALID_ARGUMENT whose message names the position', async () => {
  const instance = await createInstance(cloud, 'mask-vm');
  const error = await expectGrpcError(
    cloud.grpc.call(M.update, { metadata: { id: instance.metadata?.id ?? '' } }, { token: cloud.admin.token, headers: { 'x-resetmask': 'spec.(a,' } }),
  );
  expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
  expect(error.details).toMatch(/at position \d+ near/);
  expect(error.serviceError?.details.value).toMatchObject({ violations: [{ field: 'x-resetmask' }] });
  // Nothing changed and no operation is running: the next update goes through.
  const ok = await cloud.grpc.call(M.update, { metadata: { id: instance.metadata?.id ?? '' }, spec: { description: 'd' } }, { token: cloud.admin.token });
  await waitForOperation(cloud.grpc, cloud.admin.token, ok.message.id);
});

test('changing an IMMUTABLE field is INVALID_ARGUMENT naming it', async () => {
  const instance = await createInstance(cloud, 'immutable-vm', { imageFamily: 'ubuntu' }, 'project-imm');
  const id = instance.metadata?.id ?? '';
  for (const [request, mask, field] of [
    [{ metadata: { id }, spec: { imageFamily: 'debian' } }, undefined, 'spec.image_family'],
    [{ metadata: { id } }, 'spec', 'spec.image_family'],
    [{ metadata: { id, parentId: 'project-other' } }, undefined, 'metadata.parent_id'],
  ] as const) {
    const error = await expectGrpcError(cloud.grpc.call(M.update, request, { token: cloud.admin.token, headers: mask ? { 'x-resetmask': mask } : {} }));
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(error.serviceError?.details.value).toMatchObject({ violations: [{ field }] });
  }
});

test('a duplicate name is ALREADY_EXISTS, the quota is RESOURCE_EXHAUSTED with quota_failure', async () => {
  const parentId = 'project-quota';
  const first = await createInstance(cloud, 'q-1', {}, parentId);
  const duplicate = await expectGrpcError(cloud.grpc.call(M.create, { metadata: { parentId, name: 'q-1' } }, { token: cloud.admin.token }));
  expect(duplicate.code).toBe(GrpcStatus.ALREADY_EXISTS);
  expect(duplicate.serviceError?.details).toMatchObject({ case: 'resourceAlreadyExists', value: { resourceId: first.metadata?.id } });
  await createInstance(cloud, 'q-2', {}, parentId);
  const full = await expectGrpcError(cloud.grpc.call(M.create, { metadata: { parentId, name: 'q-3' } }, { token: cloud.admin.token }));
  expect(full.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
  expect(full.serviceError?.details.case).toBe('quotaFailure');
  expect(full.serviceError?.details.value).toMatchObject({ violations: [{ quota: 'compute.instances.count', limit: '2', requested: '3' }] });
  expect(full.serviceError?.retryType).toBe(RetryType.NOTHING);
  // The quota is per project: another project still has room.
  await createInstance(cloud, 'q-3', {}, 'project-quota2');
});

test('a stale resource_version is ABORTED with resource_conflict; 0 skips the check', async () => {
  const instance = await createInstance(cloud, 'version-vm', {}, 'project-ver');
  const id = instance.metadata?.id ?? '';
  const stale = await expectGrpcError(
    cloud.grpc.call(M.update, { metadata: { id, resourceVersion: 1n }, spec: { description: 'x' } }, { token: cloud.admin.token }),
  );
  expect(stale.code).toBe(GrpcStatus.ABORTED);
  expect(stale.serviceError?.details).toMatchObject({ case: 'resourceConflict', value: { resourceId: id } });
  expect(stale.serviceError?.retryType).toBe(RetryType.UNIT_OF_WORK);
  const skip = await cloud.grpc.call(M.update, { metadata: { id, resourceVersion: 0n }, spec: { description: 'x' } }, { token: cloud.admin.token });
  await waitForOperation(cloud.grpc, cloud.admin.token, skip.message.id);
});

test('a mutation while an operation runs is ABORTED with operation_conflict and retry_type CALL', async () => {
  const instance = await createInstance(cloud, 'busy-vm', {}, 'project-busy');
  const id = instance.metadata?.id ?? '';
  const running = await cloud.grpc.call(M.stop, { id }, { token: cloud.admin.token });
  const conflict = await expectGrpcError(cloud.grpc.call(M.update, { metadata: { id }, spec: { description: 'x' } }, { token: cloud.admin.token }));
  expect(conflict.code).toBe(GrpcStatus.ABORTED);
  expect(conflict.serviceError?.details).toMatchObject({ case: 'operationConflict', value: { resourceId: id, conflictingOperationId: running.message.id } });
  expect(conflict.serviceError?.retryType).toBe(RetryType.CALL);
  await waitForOperation(cloud.grpc, cloud.admin.token, running.message.id);
  const precondition = await expectGrpcError(cloud.grpc.call(M.stop, { id }, { token: cloud.admin.token }));
  expect(precondition.code).toBe(GrpcStatus.FAILED_PRECONDITION);
  expect(precondition.serviceError?.details.case).toBe('badResourceState');
});

test('bytes that are not the request message are INVALID_ARGUMENT, never INTERNAL', async () => {
  const garbage = [
    Uint8Array.from([0x0a, 0xff, 0xff]), // field 1 length-delimited, length runs past the end
    Uint8Array.from([0x0a, 0x02, 0xc3, 0x28]), // field 1 string with invalid UTF-8
    Uint8Array.from([0x0f]), // wire type 7 does not exist
  ];
  for (const bytes of garbage) {
    const error = await expectGrpcError(cloud.grpc.callRaw(M.get, bytes, { token: cloud.admin.token }));
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(error.serviceError?.details.case).toBe('badRequest');
  }
  // A message of another type is decoded as far as it fits; the id it yields names no instance.
  const other = toBinary(InstanceService.method.list.input, create(InstanceService.method.list.input, { parentId: PROJECT, pageSize: 5n }));
  const mismatch = await expectGrpcError(cloud.grpc.callRaw(M.get, other, { token: cloud.admin.token }));
  expect(mismatch.code).toBe(GrpcStatus.NOT_FOUND);
});

test('errors and successes carry x-request-id, echoing a safe id the client sent', async () => {
  const error = await expectGrpcError(cloud.grpc.call(M.get, { id: 'instance-x' }, { token: cloud.admin.token, headers: { 'x-request-id': 'trace-abc-123' } }));
  expect(error.headers.get('x-request-id')).toEqual(['trace-abc-123']);
  expect(error.metadata.get('x-request-id')).toEqual(['trace-abc-123']);
  const ok = await cloud.grpc.call(M.list, { parentId: PROJECT }, { token: cloud.admin.token, headers: { 'x-request-id': 'trace-abc-456' } });
  expect(ok.headers.get('x-request-id')).toEqual(['trace-abc-456']);
});

test('a second grpc-js client sees the same behaviour over a fresh connection', async () => {
  const client = new GrpcTestClient(cloud.server.url);
  try {
    const error = await expectGrpcError(client.call(M.get, { id: 'instance-x' }, { token: cloud.admin.token }));
    expect(error.code).toBe(GrpcStatus.NOT_FOUND);
  } finally {
    client.close();
  }
});
