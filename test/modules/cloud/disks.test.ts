import { status as GrpcStatus } from '@grpc/grpc-js';
import { createConnectTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { DiskService } from '../../../generated/proto/cloud/compute/v1/disk_service_pb.js';
import { DiskSpec_DiskType as DiskType, DiskStatus_State as DiskState, type Disk } from '../../../generated/proto/cloud/compute/v1/disk_pb.js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { ProjectService } from '../../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { cloudJsonRegistry } from '../../../src/handlers/cloud/json-registry.js';
import { ConnectTestClient, expectGrpcError, type RpcTestClient } from '../../support/grpc.js';
import { createInstance, PROJECT, startCloudServer, waitForOperation, type CloudServer } from './fixtures.js';

let cloud: CloudServer;
beforeAll(async () => {
  cloud = await startCloudServer();
});
afterAll(() => cloud?.close());

const D = DiskService.method;
const I = InstanceService.method;
const GIB = 1n << 30n;

/** Creates a disk and waits until it is READY. */
async function createDisk(name: string, spec: Record<string, unknown> = {}, parentId = PROJECT, client: RpcTestClient = cloud.grpc): Promise<Disk> {
  const { message: operation } = await client.call(D.create, { metadata: { parentId, name }, spec: { sizeBytes: GIB, ...spec } }, { token: cloud.admin.token });
  const done = await waitForOperation(cloud.grpc, cloud.admin.token, operation.id);
  expect(done.status?.code).toBe(0);
  return (await client.call(D.get, { id: operation.resourceId }, { token: cloud.admin.token })).message;
}

async function diskStatus(id: string) {
  return (await cloud.grpc.call(D.get, { id }, { token: cloud.admin.token })).message.status;
}

const idOf = (resource: { metadata?: { id: string } }) => resource.metadata?.id ?? '';

test.each([
  ['Connect JSON', () => createConnectTransport({ baseUrl: cloud.server.url, httpVersion: '1.1', jsonOptions: { registry: cloudJsonRegistry } })],
  ['gRPC-Web', () => createGrpcWebTransport({ baseUrl: cloud.server.url, httpVersion: '1.1' })],
])('over %s, a disk is created READY, read by name and listed', async (protocol, transport) => {
  const client = new ConnectTestClient(transport());
  const name = `disk-${protocol.replace(/\W/g, '').toLowerCase()}`;
  const disk = await createDisk(name, { type: DiskType.NETWORK_HDD }, PROJECT, client);
  expect(disk.status).toMatchObject({ state: DiskState.READY, sizeBytes: GIB, blockSizeBytes: 4096n, readWriteAttachment: '' });
  const byName = (await client.call(D.getByName, { parentId: PROJECT, name }, { token: cloud.reader.token })).message;
  expect(idOf(byName)).toBe(idOf(disk));
  const page = (await client.call(D.list, { parentId: PROJECT }, { token: cloud.reader.token })).message;
  expect(page.items.map(idOf)).toContain(idOf(disk));
});

test('Update replaces the spec under the reset mask: an unnamed field keeps its value, a named one is reset, the size only grows', async () => {
  const disk = await createDisk('disk-mask', { sizeBytes: 2n * GIB, sourceImageFamily: { imageFamily: 'ubuntu' } });
  const id = idOf(disk);
  const token = cloud.admin.token;
  // No mask: source_image_family (absent from the request) keeps its value.
  const grow = (await cloud.grpc.call(D.update, { metadata: { id }, spec: { sizeBytes: 4n * GIB } }, { token })).message;
  await waitForOperation(cloud.grpc, token, grow.id);
  let stored = (await cloud.grpc.call(D.get, { id }, { token })).message;
  expect(stored.spec?.sourceImageFamily?.imageFamily).toBe('ubuntu');
  expect(stored.status).toMatchObject({ state: DiskState.READY, sizeBytes: 4n * GIB });
  // An IMMUTABLE field named by the mask cannot be reset.
  const immutable = await expectGrpcError(
    cloud.grpc.call(D.update, { metadata: { id }, spec: { sizeBytes: 4n * GIB } }, { token, headers: { 'x-resetmask': 'spec.source_image_family' } }),
  );
  expect(immutable.code).toBe(GrpcStatus.INVALID_ARGUMENT);
  expect(immutable.serviceError?.details.value).toMatchObject({ violations: [{ field: 'spec.source_image_family' }] });
  // labels named by the mask and absent are reset.
  const labelled = (await cloud.grpc.call(D.update, { metadata: { id, labels: { team: 'a' } }, spec: { sizeBytes: 4n * GIB } }, { token })).message;
  await waitForOperation(cloud.grpc, token, labelled.id);
  const reset = (await cloud.grpc.call(D.update, { metadata: { id }, spec: { sizeBytes: 4n * GIB } }, { token, headers: { 'x-resetmask': 'metadata.labels' } }))
    .message;
  expect(reset.requestHeaders['x-resetmask']?.values).toEqual(['metadata.labels']);
  await waitForOperation(cloud.grpc, token, reset.id);
  stored = (await cloud.grpc.call(D.get, { id }, { token })).message;
  expect(stored.metadata?.labels).toEqual({});
  const shrink = await expectGrpcError(cloud.grpc.call(D.update, { metadata: { id }, spec: { sizeBytes: GIB } }, { token }));
  expect(shrink.code).toBe(GrpcStatus.INVALID_ARGUMENT);
  expect(shrink.serviceError?.details.value).toMatchObject({ violations: [{ field: 'spec.size_bytes' }] });
});

test("an instance's disk_id of this server's form must name a disk of its project; another value stays an external reference", async () => {
  const token = cloud.admin.token;
  const elsewhere = await createDisk('disk-elsewhere', {}, 'project-other');
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ bootDisk: { diskId: 'disk-00000000000000000000' } }, 'spec.boot_disk.disk_id'],
    [{ secondaryDisks: [{ diskId: 'external-volume-1' }, { diskId: idOf(elsewhere) }] }, 'spec.secondary_disks.1.disk_id'],
  ];
  for (const [spec, field] of cases) {
    const error = await expectGrpcError(cloud.grpc.call(I.create, { metadata: { parentId: PROJECT, name: 'vm-bad-disk' }, spec }, { token }));
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(error.serviceError?.details.value).toMatchObject({ violations: [{ field }] });
  }
  const external = await createInstance(cloud, 'vm-external-disk', { bootDisk: { diskId: 'disk-boot-1' }, secondaryDisks: [{ diskId: 'nfs-share' }] });
  expect(external.spec?.bootDisk?.diskId).toBe('disk-boot-1');
});

test('a disk attached read-write cannot be attached read-write elsewhere nor deleted; detaching or deleting the instance frees it', async () => {
  const token = cloud.admin.token;
  const disk = await createDisk('disk-shared');
  const diskId = idOf(disk);
  const first = await createInstance(cloud, 'vm-holder', { bootDisk: { diskId } });
  expect((await diskStatus(diskId))?.readWriteAttachment).toBe(idOf(first));

  const second = await expectGrpcError(
    cloud.grpc.call(I.create, { metadata: { parentId: PROJECT, name: 'vm-taker' }, spec: { bootDisk: { diskId } } }, { token }),
  );
  expect(second.code).toBe(GrpcStatus.FAILED_PRECONDITION);
  expect(second.serviceError?.details.case).toBe('badResourceState');
  // Read-only elsewhere is allowed, and shown.
  const reader = await createInstance(cloud, 'vm-reader', { secondaryDisks: [{ diskId, readOnly: true }] });
  expect((await diskStatus(diskId))?.readOnlyAttachments).toEqual([idOf(reader)]);

  const held = await expectGrpcError(cloud.grpc.call(D.delete, { id: diskId }, { token }));
  expect(held.code).toBe(GrpcStatus.FAILED_PRECONDITION);
  expect(held.serviceError?.details.case).toBe('badResourceState');

  // Detach by an Update of the instance without the disk (the mask resets boot_disk).
  const detach = (await cloud.grpc.call(I.update, { metadata: { id: idOf(first) }, spec: {} }, { token, headers: { 'x-resetmask': 'spec.boot_disk' } }))
    .message;
  await waitForOperation(cloud.grpc, token, detach.id);
  expect((await diskStatus(diskId))?.readWriteAttachment).toBe('');
  // Now another instance may take it read-write; deleting that instance frees it again.
  const taker = await createInstance(cloud, 'vm-taker', { bootDisk: { diskId } });
  expect((await diskStatus(diskId))?.readWriteAttachment).toBe(idOf(taker));
  for (const instance of [taker, reader])
    await waitForOperation(cloud.grpc, token, (await cloud.grpc.call(I.delete, { id: idOf(instance) }, { token })).message.id);
  expect(await diskStatus(diskId)).toMatchObject({ readWriteAttachment: '', readOnlyAttachments: [] });
  const deleted = (await cloud.grpc.call(D.delete, { id: diskId }, { token })).message;
  expect((await waitForOperation(cloud.grpc, token, deleted.id)).status?.code).toBe(0);
});

test('a project that holds a disk cannot be deleted', async () => {
  const token = cloud.admin.token;
  const project = (await cloud.grpc.call(ProjectService.method.create, { metadata: { name: 'disk-holder-project' } }, { token })).message.resourceId;
  const disk = await createDisk('disk-in-project', {}, project);
  const refused = await expectGrpcError(cloud.grpc.call(ProjectService.method.delete, { id: project }, { token }));
  expect(refused.code).toBe(GrpcStatus.FAILED_PRECONDITION);
  expect(refused.message).toContain('1 disks');
  await waitForOperation(cloud.grpc, token, (await cloud.grpc.call(D.delete, { id: idOf(disk) }, { token })).message.id);
  await cloud.grpc.call(ProjectService.method.delete, { id: project }, { token });
});
