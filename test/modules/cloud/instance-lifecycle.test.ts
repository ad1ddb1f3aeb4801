import { status as GrpcStatus } from '@grpc/grpc-js';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { InstanceService, CreateInstanceRequestSchema } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { InstanceStatus_State as State } from '../../../generated/proto/cloud/compute/v1/instance_pb.js';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { createInstance, PROJECT, startCloudServer, waitForOperation, type CloudServer } from './fixtures.js';

let cloud: CloudServer;
beforeAll(async () => {
  // The tests read the transitional states (STOPPING, STARTING, DELETING, UPDATING) right after a
  // mutation returns: the simulated work must outlast one Get even on a loaded machine.
  cloud = await startCloudServer({ COMPUTE_WORK_MS: '800' });
});
afterAll(() => cloud?.close());

const M = InstanceService.method;

test('create returns a running operation that completes and leaves the instance RUNNING', async () => {
  const { message: operation, headers } = await cloud.grpc.call(
    M.create,
    { metadata: { parentId: PROJECT, name: 'vm-1', labels: { team: 'a' } }, spec: { description: 'first', cloudInitUserData: 'secret-password' } },
    { token: cloud.admin.token, headers: { 'x-idempotency-key': 'create-vm-1-0000000001' } },
  );
  expect(headers.get('x-request-id')[0]).toBeTruthy();
  expect(operation.id).toMatch(/^operation-/);
  expect(operation.resourceId).toMatch(/^instance-/);
  expect(operation.status).toBeUndefined();
  expect(operation.createdBy).toBe(`useraccount-${cloud.admin.id}`);
  expect(operation.requestHeaders['x-idempotency-key']?.values).toEqual(['create-vm-1-0000000001']);
  const request = operation.request ? anyUnpack(operation.request, CreateInstanceRequestSchema) : undefined;
  expect(request?.metadata?.name).toBe('vm-1');
  expect(request?.spec?.description).toBe('first');
  expect(request?.spec?.cloudInitUserData).toBe('');
  const done = await waitForOperation(cloud.grpc, cloud.admin.token, operation.id);
  expect(done.status?.code).toBe(0);
  expect(done.finishedAt).toBeDefined();
  const { message: instance } = await cloud.grpc.call(M.get, { id: operation.resourceId }, { token: cloud.reader.token });
  expect(instance.status?.state).toBe(State.RUNNING);
  expect(instance.metadata).toMatchObject({ name: 'vm-1', parentId: PROJECT, labels: { team: 'a' } });
  expect(instance.spec?.cloudInitUserData).toBe('secret-password');
  expect(instance.metadata?.resourceVersion).toBe(2n);
});

test('stop, start and delete move the instance through their states', async () => {
  const instance = await createInstance(cloud, 'vm-cycle', { networkInterfaces: [{ name: 'eth0', subnetId: 'subnet-1', publicIp: true }] });
  const id = instance.metadata?.id ?? '';
  expect(instance.status?.networkInterfaces[0]?.ipAddress).toMatch(/^10\./);
  expect(instance.status?.networkInterfaces[0]?.publicIpAddress).toMatch(/^203\.0\.113\./);
  const token = cloud.admin.token;

  const stop = (await cloud.grpc.call(M.stop, { id }, { token })).message;
  expect((await cloud.grpc.call(M.get, { id }, { token })).message.status?.state).toBe(State.STOPPING);
  await waitForOperation(cloud.grpc, token, stop.id);
  const stopped = (await cloud.grpc.call(M.get, { id }, { token })).message;
  expect(stopped.status?.state).toBe(State.STOPPED);
  expect(stopped.spec?.stopped).toBe(true);

  const start = (await cloud.grpc.call(M.start, { id }, { token })).message;
  expect((await cloud.grpc.call(M.get, { id }, { token })).message.status?.state).toBe(State.STARTING);
  await waitForOperation(cloud.grpc, token, start.id);
  expect((await cloud.grpc.call(M.get, { id }, { token })).message.status?.state).toBe(State.RUNNING);

  const del = (await cloud.grpc.call(M.delete, { id }, { token })).message;
  expect((await cloud.grpc.call(M.get, { id }, { token })).message.status?.state).toBe(State.DELETING);
  await waitForOperation(cloud.grpc, token, del.id);
  const gone = await cloud.grpc.call(M.get, { id }, { token }).catch((error: { code: number }) => error);
  expect((gone as { code: number }).code).toBe(GrpcStatus.NOT_FOUND);

  const { message: history } = await cloud.grpc.call(OperationService.method.list, { resourceId: id }, { token: cloud.reader.token });
  expect(history.operations.map((operation) => operation.description)).toEqual(['Delete instance', 'Start instance', 'Stop instance', 'Create instance']);
  expect(history.operations.every((operation) => operation.status?.code === 0)).toBe(true);
});

test('get by name, list with pages and operations by parent', async () => {
  const parentId = 'project-paging';
  for (const name of ['p-a', 'p-b', 'p-c']) await createInstance(cloud, name, {}, parentId);
  const token = cloud.reader.token;
  const byName = (await cloud.grpc.call(M.getByName, { parentId, name: 'p-b' }, { token })).message;
  expect(byName.metadata?.name).toBe('p-b');

  const first = (await cloud.grpc.call(M.list, { parentId, pageSize: 2n }, { token })).message;
  expect(first.items.map((item) => item.metadata?.name)).toEqual(['p-a', 'p-b']);
  expect(first.nextPageToken).not.toBe('');
  const second = (await cloud.grpc.call(M.list, { parentId, pageSize: 2n, pageToken: first.nextPageToken }, { token })).message;
  expect(second.items.map((item) => item.metadata?.name)).toEqual(['p-c']);
  expect(second.nextPageToken).toBe('');

  const ops = (await cloud.grpc.call(M.listOperationsByParent, { parentId, pageSize: 2n }, { token })).message;
  expect(ops.operations).toHaveLength(2);
  expect(ops.operations[0]?.description).toBe('Create instance');
  const rest = (await cloud.grpc.call(M.listOperationsByParent, { parentId, pageToken: ops.nextPageToken }, { token })).message;
  expect(rest.operations).toHaveLength(1);
  expect(rest.nextPageToken).toBe('');
  const ids = new Set([...ops.operations, ...rest.operations].map((operation) => operation.resourceId));
  expect(ids.size).toBe(3);
});

test('an update returns an operation that records the canonical mask and ends RUNNING with a new version', async () => {
  const instance = await createInstance(cloud, 'vm-update', { description: 'before', sshKeys: ['k1'] });
  const id = instance.metadata?.id ?? '';
  const token = cloud.admin.token;
  const { message: operation } = await cloud.grpc.call(
    M.update,
    { metadata: { id, resourceVersion: instance.metadata?.resourceVersion ?? 0n }, spec: { description: 'after' } },
    { token, headers: { 'x-resetmask': ['spec.ssh_keys', 'spec.( description )'] } },
  );
  expect(operation.requestHeaders['x-resetmask']?.values).toEqual(['spec.(description,ssh_keys)']);
  expect((await cloud.grpc.call(M.get, { id }, { token })).message.status?.state).toBe(State.UPDATING);
  await waitForOperation(cloud.grpc, token, operation.id);
  const updated = (await cloud.grpc.call(M.get, { id }, { token })).message;
  expect(updated.spec?.description).toBe('after');
  expect(updated.spec?.sshKeys).toEqual([]);
  expect(updated.status?.state).toBe(State.RUNNING);
  expect(updated.metadata?.resourceVersion).toBeGreaterThan(instance.metadata?.resourceVersion ?? 0n);
});
