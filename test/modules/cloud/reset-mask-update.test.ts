import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { PortForward_Protocol as Protocol, type Instance } from '../../../generated/proto/cloud/compute/v1/instance_pb.js';
import { createInstance, startCloudServer, waitForOperation, type CloudServer } from './fixtures.js';

let cloud: CloudServer;
beforeAll(async () => {
  cloud = await startCloudServer({ COMPUTE_WORK_MS: '5' });
});
afterAll(() => cloud?.close());

const M = InstanceService.method;

const SPEC = {
  description: 'web server',
  resources: { platform: 'cpu-e2', preset: '4vcpu-16gb' },
  secondaryDisks: [
    { deviceId: 'sdb', diskId: 'disk-b', readOnly: true },
    { deviceId: 'sdc', diskId: 'disk-c', readOnly: true },
  ],
  networkInterfaces: [{ name: 'eth0', subnetId: 'subnet-1', publicIp: true }],
  sshKeys: ['ssh-ed25519 AAAA key1'],
  ports: { ssh: { port: 22, protocol: Protocol.TCP }, dns: { port: 53, protocol: Protocol.UDP } },
  restartPriority: 5,
  placement: { case: 'zoneId' as const, value: 'zone-a' },
};

/** Updates with a mask, waits for the operation, and answers the stored instance and the recorded mask. */
async function update(
  name: string,
  request: { spec?: Record<string, unknown> },
  mask: string | undefined,
): Promise<{ instance: Instance; recorded: string[] | undefined }> {
  const created = await createInstance(cloud, name, SPEC, 'project-masks');
  const id = created.metadata?.id ?? '';
  const token = cloud.admin.token;
  const { message: operation } = await cloud.grpc.call(
    M.update,
    { metadata: { id }, ...request },
    { token, headers: mask === undefined ? {} : { 'x-resetmask': mask } },
  );
  const done = await waitForOperation(cloud.grpc, token, operation.id);
  expect(done.status?.code).toBe(0);
  const { message: instance } = await cloud.grpc.call(M.get, { id }, { token });
  return { instance, recorded: operation.requestHeaders['x-resetmask']?.values };
}

test('without a mask, default values in the request change nothing (rule 1)', async () => {
  const { instance, recorded } = await update('no-mask', { spec: { description: '' } }, undefined);
  expect(instance.spec?.description).toBe('web server');
  expect(instance.spec?.sshKeys).toEqual(['ssh-ed25519 AAAA key1']);
  expect(recorded).toBeUndefined();
});

test('`a`: naming a structure absent from the request resets it; present (even empty), it keeps its fields (rule 7)', async () => {
  const absent = await update('mask-a-absent', {}, 'spec');
  expect(absent.instance.spec).toBeUndefined();
  expect(absent.instance.metadata?.name).toBe('mask-a-absent');
  expect(absent.recorded).toEqual(['spec']);
  const present = await update('mask-a-present', { spec: {} }, 'spec');
  expect(present.instance.spec?.description).toBe('web server');
  expect(present.instance.spec?.resources).toMatchObject({ platform: 'cpu-e2', preset: '4vcpu-16gb' });
});

test('`b.c` with `b` absent resets `b` entirely', async () => {
  const absent = await update('mask-bc-absent', { spec: {} }, 'spec.resources.preset');
  expect(absent.instance.spec?.resources).toBeUndefined();
  expect(absent.instance.spec?.description).toBe('web server');
});

test('`b.c`: a nested field is reset to its default, siblings stay', async () => {
  const { instance, recorded } = await update('mask-b-c', { spec: { resources: { platform: 'cpu-e3' } } }, 'spec.resources.preset');
  expect(instance.spec?.resources).toMatchObject({ platform: 'cpu-e3', preset: '' });
  expect(instance.spec?.description).toBe('web server');
  expect(recorded).toEqual(['spec.resources.preset']);
});

test('`d.e.12`: an indexed list element has the named field reset; the others keep theirs', async () => {
  const disks = [
    { deviceId: 'sdb', diskId: 'disk-b' },
    { deviceId: 'sdc', diskId: 'disk-c' },
  ];
  const { instance, recorded } = await update('mask-d-e-12', { spec: { secondaryDisks: disks } }, 'spec.secondary_disks.1.read_only');
  expect(instance.spec?.secondaryDisks.map((disk) => disk.readOnly)).toEqual([true, false]);
  expect(recorded).toEqual(['spec.secondary_disks.1.read_only']);
});

test('`f.(j.h,i.j).k`: one field under two alternatives is reset in both', async () => {
  const { instance, recorded } = await update(
    'mask-alternatives',
    { spec: { secondaryDisks: [{}, {}] } },
    'spec.(secondary_disks.0,secondary_disks.1).disk_id',
  );
  expect(instance.spec?.secondaryDisks.map((disk) => [disk.deviceId, disk.diskId, disk.readOnly])).toEqual([
    ['sdb', '', true],
    ['sdc', '', true],
  ]);
  expect(recorded).toEqual(['spec.secondary_disks.(0.disk_id,1.disk_id)']);
});

test('`l.*.m`: a field of every map entry is reset; entries missing from the request are removed', async () => {
  const { instance, recorded } = await update('mask-wildcard', { spec: { ports: { ssh: { port: 2222 } } } }, 'spec.ports.*.protocol');
  expect(Object.keys(instance.spec?.ports ?? {})).toEqual(['ssh']);
  expect(instance.spec?.ports.ssh).toMatchObject({ port: 2222, protocol: Protocol.UNSPECIFIED });
  expect(recorded).toEqual(['spec.ports.*.protocol']);
});

test('several X-ResetMask values are merged, lists are cleared only when named, oneofs reset by member name', async () => {
  const { instance, recorded } = await update('mask-merged', { spec: {} }, 'spec.ssh_keys, spec.zone_id,spec.restart_priority');
  expect(instance.spec?.sshKeys).toEqual([]);
  expect(instance.spec?.placement.case).toBeUndefined();
  expect(instance.spec?.restartPriority).toBeUndefined();
  expect(instance.spec?.secondaryDisks).toHaveLength(2);
  expect(recorded).toEqual(['spec.(restart_priority,ssh_keys,zone_id)']);
});

test('mask names that are not fields are ignored and OUTPUT_ONLY status never changes', async () => {
  const { instance, recorded } = await update('mask-unknown', { spec: { description: 'renamed' } }, 'spec.future_field,status');
  expect(instance.spec?.description).toBe('renamed');
  expect(instance.status?.networkInterfaces).toHaveLength(1);
  expect(recorded).toEqual(['spec.future_field,status']);
});
