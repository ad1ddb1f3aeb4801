import { create, fromJson, toJson, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { InstanceSchema } from '../../../generated/proto/cloud/compute/v1/instance_pb.js';
import { OperationSchema } from '../../../generated/proto/cloud/common/v1/operation_pb.js';
import { applyResetMask, ImmutableFieldError, parseResetMask } from '../../../src/engines/reset-mask/index.js';

/** The stored instance every case starts from unless it gives its own. */
const STORED: JsonObject = {
  metadata: {
    id: 'computeinstance-1',
    parentId: 'project-1',
    name: 'vm',
    resourceVersion: '3',
    createdAt: '2024-01-01T00:00:00Z',
    updatedAt: '2024-01-02T00:00:00Z',
    labels: { env: 'prod', team: 'a' },
  },
  spec: {
    description: 'web',
    resources: { platform: 'cpu-e2', preset: '4vcpu' },
    bootDisk: { deviceId: 'boot', diskId: 'disk-1', readOnly: true },
    secondaryDisks: [
      { deviceId: 'd0', diskId: 'disk-a', readOnly: true },
      { deviceId: 'd1', diskId: 'disk-b' },
      { deviceId: 'd2', diskId: 'disk-c', readOnly: true },
    ],
    networkInterfaces: [{ name: 'eth0', subnetId: 'subnet-1', ipAddress: '10.0.0.5', publicIp: true }],
    sshKeys: ['k1', 'k2'],
    ports: {
      http: { port: 80, protocol: 'PROTOCOL_TCP' },
      dns: { port: 53, protocol: 'PROTOCOL_UDP' },
      'my port': { port: 8443, protocol: 'PROTOCOL_TCP' },
    },
    stopped: true,
    restartPriority: 5,
    zoneId: 'zone-a',
    serviceAccountId: 'serviceaccount-1',
    cloudInitUserData: '#cloud-config',
    recoveryPolicy: 'RECOVERY_POLICY_FAIL',
    imageFamily: 'ubuntu22',
  },
  status: {
    state: 'STATE_RUNNING',
    reconciling: true,
    networkInterfaces: [{ name: 'eth0', ipAddress: '10.0.0.5', publicIpAddress: '1.2.3.4' }],
  },
};

const ID = { metadata: { id: 'computeinstance-1' } };
/** The three stored disks, sent back unchanged (empty elements patch nothing). */
const THREE_EMPTY_DISKS = [{}, {}, {}];
/** The stored ports, sent back as empty entries (so none is removed). */
const ALL_PORTS_EMPTY = { http: {}, dns: {}, 'my port': {} };

interface Given {
  /** Replaces fields of STORED's spec for this case (null removes a field). */
  readonly storedSpec?: JsonObject;
  readonly request: JsonObject;
  readonly mask?: string;
}
/** Either the changes to the stored JSON (dotted JSON paths; undefined removes), or the path of the immutable field that fails. */
type Want = { readonly changed: Record<string, JsonValue | undefined> } | { readonly immutable: string };

function withSpec(storedSpec: JsonObject | undefined): JsonObject {
  const stored = structuredClone(STORED);
  if (storedSpec === undefined) return stored;
  const spec: JsonObject = { ...(stored['spec'] as JsonObject), ...storedSpec };
  for (const [key, value] of Object.entries(spec)) if (value === null) delete spec[key];
  stored['spec'] = spec;
  return stored;
}

type Container = JsonObject | JsonValue[];

/** Applies dotted-path changes (numeric segments index arrays) to a JSON object, creating objects on the way. */
function applyChanges(json: JsonObject, changes: Record<string, JsonValue | undefined>): JsonObject {
  const out = structuredClone(json);
  for (const [path, value] of Object.entries(changes)) {
    const keys = path.split('.');
    const last = keys.pop() ?? '';
    let node: Container = out;
    for (const key of keys) {
      const holder = node as Record<string, JsonValue>;
      const next = holder[key];
      if (typeof next !== 'object' || next === null) holder[key] = {};
      node = holder[key] as Container;
    }
    const holder = node as Record<string, JsonValue>;
    if (value === undefined) delete holder[last];
    else holder[last] = value;
  }
  return out;
}

function normalized(json: JsonObject): JsonValue {
  return toJson(InstanceSchema, fromJson(InstanceSchema, json));
}

const cases: [string, { given: Given; want: Want }][] = [
  // Scalars and enums.
  ['an empty request without a mask changes nothing', { given: { request: ID }, want: { changed: {} } }],
  [
    'a non-default string replaces the stored one',
    { given: { request: { ...ID, spec: { description: 'api' } } }, want: { changed: { 'spec.description': 'api' } } },
  ],
  ['a default string without a mask keeps the stored one', { given: { request: { ...ID, spec: { description: '' } } }, want: { changed: {} } }],
  [
    'naming a string with a default value clears it',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.description' }, want: { changed: { 'spec.description': undefined } } },
  ],
  [
    'naming a string with a value writes the value',
    { given: { request: { ...ID, spec: { description: 'x' } }, mask: 'spec.description' }, want: { changed: { 'spec.description': 'x' } } },
  ],
  ['a false bool without a mask keeps the stored true', { given: { request: { ...ID, spec: { stopped: false } } }, want: { changed: {} } }],
  ['naming a bool resets it to false', { given: { request: { ...ID, spec: {} }, mask: 'spec.stopped' }, want: { changed: { 'spec.stopped': undefined } } }],
  [
    'a non-default enum replaces the stored one',
    {
      given: { request: { ...ID, spec: { recoveryPolicy: 'RECOVERY_POLICY_RECOVER' } } },
      want: { changed: { 'spec.recoveryPolicy': 'RECOVERY_POLICY_RECOVER' } },
    },
  ],
  [
    'naming an enum resets it to its zero value',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.recovery_policy' }, want: { changed: { 'spec.recoveryPolicy': undefined } } },
  ],
  [
    'a mask naming several scalars resets each of them',
    {
      given: { request: { ...ID, spec: {} }, mask: 'spec.(description,service_account_id,cloud_init_user_data)' },
      want: { changed: { 'spec.description': undefined, 'spec.serviceAccountId': undefined, 'spec.cloudInitUserData': undefined } },
    },
  ],
  [
    'metadata.name is replaced like any scalar',
    { given: { request: { metadata: { id: 'computeinstance-1', name: 'vm2' } } }, want: { changed: { 'metadata.name': 'vm2' } } },
  ],
  // Explicit presence.
  [
    'an optional scalar present with 0 is written without a mask',
    { given: { request: { ...ID, spec: { restartPriority: 0 } } }, want: { changed: { 'spec.restartPriority': 0 } } },
  ],
  [
    'an optional scalar present with a value is written',
    { given: { request: { ...ID, spec: { restartPriority: 7 } } }, want: { changed: { 'spec.restartPriority': 7 } } },
  ],
  ['an absent optional scalar without a mask is kept', { given: { request: { ...ID, spec: {} } }, want: { changed: {} } }],
  [
    'an absent optional scalar named in the mask is cleared (unset, not 0)',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.restart_priority' }, want: { changed: { 'spec.restartPriority': undefined } } },
  ],
  [
    'an optional scalar present and named is written',
    { given: { request: { ...ID, spec: { restartPriority: 0 } }, mask: 'spec.restart_priority' }, want: { changed: { 'spec.restartPriority': 0 } } },
  ],
  // Nested messages (docs/cloud-api.md: naming `a.b` while `a` is absent resets `a`).
  [
    'naming a structure absent from the request resets it entirely',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.resources' }, want: { changed: { 'spec.resources': undefined } } },
  ],
  [
    'naming a field of a structure absent from the request resets the whole structure',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.resources.platform' }, want: { changed: { 'spec.resources': undefined } } },
  ],
  [
    'naming a field of a structure present but empty resets only that field',
    { given: { request: { ...ID, spec: { resources: {} } }, mask: 'spec.resources.platform' }, want: { changed: { 'spec.resources.platform': undefined } } },
  ],
  [
    'naming a structure present but empty does not clear its fields',
    { given: { request: { ...ID, spec: { resources: {} } }, mask: 'spec.resources' }, want: { changed: {} } },
  ],
  [
    'a structure present with one field updates that field and keeps the others',
    { given: { request: { ...ID, spec: { resources: { preset: '8vcpu' } } } }, want: { changed: { 'spec.resources.preset': '8vcpu' } } },
  ],
  ['a structure absent without a mask is kept', { given: { request: { ...ID, spec: { description: 'web' } } }, want: { changed: {} } }],
  [
    'naming a bool of a present structure resets it',
    {
      given: { request: { ...ID, spec: { bootDisk: { diskId: 'disk-1' } } }, mask: 'spec.boot_disk.read_only' },
      want: { changed: { 'spec.bootDisk.readOnly': undefined } },
    },
  ],
  [
    'a structure stored empty is created from the request',
    {
      given: { storedSpec: { bootDisk: null }, request: { ...ID, spec: { bootDisk: { diskId: 'disk-9' } } } },
      want: { changed: { 'spec.bootDisk': { diskId: 'disk-9' } } },
    },
  ],
  [
    'a group names fields of several structures',
    {
      given: { request: { ...ID, spec: { resources: {}, bootDisk: {} } }, mask: 'spec.(resources.preset,boot_disk.device_id)' },
      want: { changed: { 'spec.resources.preset': undefined, 'spec.bootDisk.deviceId': undefined } },
    },
  ],
  // Lists of messages: patched over the common prefix.
  [
    'a shorter list truncates and patches the common prefix',
    {
      given: { request: { ...ID, spec: { secondaryDisks: [{ deviceId: 'd0' }] } } },
      want: { changed: { 'spec.secondaryDisks': [{ deviceId: 'd0', diskId: 'disk-a', readOnly: true }] } },
    },
  ],
  [
    'a longer list extends with elements taken from the request',
    {
      given: { request: { ...ID, spec: { secondaryDisks: [{}, {}, {}, { deviceId: 'd3', diskId: 'disk-d' }] } } },
      want: {
        changed: {
          'spec.secondaryDisks': [
            { deviceId: 'd0', diskId: 'disk-a', readOnly: true },
            { deviceId: 'd1', diskId: 'disk-b' },
            { deviceId: 'd2', diskId: 'disk-c', readOnly: true },
            { deviceId: 'd3', diskId: 'disk-d' },
          ],
        },
      },
    },
  ],
  [
    'elements of a list of the same length are patched one by one',
    {
      given: { request: { ...ID, spec: { secondaryDisks: [{ diskId: 'disk-x' }, {}, { deviceId: 'e2' }] } } },
      want: {
        changed: {
          'spec.secondaryDisks.0': { deviceId: 'd0', diskId: 'disk-x', readOnly: true },
          'spec.secondaryDisks.2': { deviceId: 'e2', diskId: 'disk-c', readOnly: true },
        },
      },
    },
  ],
  [
    'naming a field at one index resets it in that element only',
    {
      given: { request: { ...ID, spec: { secondaryDisks: THREE_EMPTY_DISKS } }, mask: 'spec.secondary_disks.0.read_only' },
      want: { changed: { 'spec.secondaryDisks.0': { deviceId: 'd0', diskId: 'disk-a' } } },
    },
  ],
  [
    'naming a field under * resets it in every element',
    {
      given: { request: { ...ID, spec: { secondaryDisks: THREE_EMPTY_DISKS } }, mask: 'spec.secondary_disks.*.disk_id' },
      want: { changed: { 'spec.secondaryDisks': [{ deviceId: 'd0', readOnly: true }, { deviceId: 'd1' }, { deviceId: 'd2', readOnly: true }] } },
    },
  ],
  [
    '* and an index combine for that index',
    {
      given: { request: { ...ID, spec: { secondaryDisks: THREE_EMPTY_DISKS } }, mask: 'spec.secondary_disks.(*.read_only,1.disk_id)' },
      want: { changed: { 'spec.secondaryDisks': [{ deviceId: 'd0', diskId: 'disk-a' }, { deviceId: 'd1' }, { deviceId: 'd2', diskId: 'disk-c' }] } },
    },
  ],
  [
    'naming an index alone does not clear the element',
    { given: { request: { ...ID, spec: { secondaryDisks: THREE_EMPTY_DISKS } }, mask: 'spec.secondary_disks.1' }, want: { changed: {} } },
  ],
  [
    'a masked index beyond the request length has no further effect',
    { given: { request: { ...ID, spec: { secondaryDisks: THREE_EMPTY_DISKS } }, mask: 'spec.secondary_disks.5.disk_id' }, want: { changed: {} } },
  ],
  [
    'new elements ignore the mask',
    {
      given: { request: { ...ID, spec: { secondaryDisks: [{}, {}, {}, { diskId: 'disk-d' }] } }, mask: 'spec.secondary_disks.*.device_id' },
      want: {
        changed: {
          'spec.secondaryDisks': [{ diskId: 'disk-a', readOnly: true }, { diskId: 'disk-b' }, { diskId: 'disk-c', readOnly: true }, { diskId: 'disk-d' }],
        },
      },
    },
  ],
  ['an absent list without a mask is kept', { given: { request: { ...ID, spec: { description: 'web' } } }, want: { changed: {} } }],
  [
    'an absent list named in the mask is cleared',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.secondary_disks' }, want: { changed: { 'spec.secondaryDisks': undefined } } },
  ],
  [
    'an empty list named in the mask is cleared',
    {
      given: { request: { ...ID, spec: { networkInterfaces: [] } }, mask: 'spec.network_interfaces' },
      want: { changed: { 'spec.networkInterfaces': undefined } },
    },
  ],
  [
    'an empty list named only by an index is cleared too',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.network_interfaces.0.public_ip' }, want: { changed: { 'spec.networkInterfaces': undefined } } },
  ],
  [
    'naming a bool in a list element resets it and keeps the other fields',
    {
      given: { request: { ...ID, spec: { networkInterfaces: [{ name: 'eth0' }] } }, mask: 'spec.network_interfaces.0.public_ip' },
      want: { changed: { 'spec.networkInterfaces.0.publicIp': undefined } },
    },
  ],
  // Lists of scalars.
  [
    'a non-empty scalar list replaces the stored one',
    { given: { request: { ...ID, spec: { sshKeys: ['k3'] } } }, want: { changed: { 'spec.sshKeys': ['k3'] } } },
  ],
  ['an empty scalar list without a mask is kept', { given: { request: { ...ID, spec: { sshKeys: [] } } }, want: { changed: {} } }],
  [
    'an empty scalar list named in the mask is cleared',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.ssh_keys' }, want: { changed: { 'spec.sshKeys': undefined } } },
  ],
  [
    'a longer scalar list replaces the stored one whatever the mask',
    {
      given: { request: { ...ID, spec: { sshKeys: ['k1', 'k2', 'k3'] } }, mask: 'spec.ssh_keys.0' },
      want: { changed: { 'spec.sshKeys': ['k1', 'k2', 'k3'] } },
    },
  ],
  // Maps of messages (patched per key) and of scalars.
  [
    'a map entry present in both is patched and absent entries are removed',
    {
      given: { request: { ...ID, spec: { ports: { http: { port: 8080 } } } } },
      want: { changed: { 'spec.ports': { http: { port: 8080, protocol: 'PROTOCOL_TCP' } } } },
    },
  ],
  [
    'a new map key is added from the request',
    { given: { request: { ...ID, spec: { ports: { ...ALL_PORTS_EMPTY, ssh: { port: 22 } } } } }, want: { changed: { 'spec.ports.ssh': { port: 22 } } } },
  ],
  [
    'naming a field under a map key resets it in that entry',
    {
      given: { request: { ...ID, spec: { ports: ALL_PORTS_EMPTY } }, mask: 'spec.ports.http.protocol' },
      want: { changed: { 'spec.ports.http': { port: 80 } } },
    },
  ],
  [
    'naming a field under * resets it in every entry',
    {
      given: { request: { ...ID, spec: { ports: ALL_PORTS_EMPTY } }, mask: 'spec.ports.*.port' },
      want: { changed: { 'spec.ports': { http: { protocol: 'PROTOCOL_TCP' }, dns: { protocol: 'PROTOCOL_UDP' }, 'my port': { protocol: 'PROTOCOL_TCP' } } } },
    },
  ],
  [
    'a quoted map key in the mask reaches its entry',
    {
      given: { request: { ...ID, spec: { ports: ALL_PORTS_EMPTY } }, mask: 'spec.ports."my port".port' },
      want: { changed: { 'spec.ports.my port': { protocol: 'PROTOCOL_TCP' } } },
    },
  ],
  ['an absent map without a mask is kept', { given: { request: { ...ID, spec: { description: 'web' } } }, want: { changed: {} } }],
  [
    'an absent map named in the mask is cleared',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.ports' }, want: { changed: { 'spec.ports': undefined } } },
  ],
  [
    'a non-empty scalar map replaces the stored one',
    { given: { request: { metadata: { id: 'computeinstance-1', labels: { env: 'dev' } } } }, want: { changed: { 'metadata.labels': { env: 'dev' } } } },
  ],
  ['an empty scalar map without a mask is kept', { given: { request: { metadata: { id: 'computeinstance-1', labels: {} } } }, want: { changed: {} } }],
  [
    'an empty scalar map named in the mask is cleared',
    { given: { request: ID, mask: 'metadata.labels' }, want: { changed: { 'metadata.labels': undefined } } },
  ],
  // Oneofs.
  [
    'a oneof member set in the request replaces the stored member',
    {
      given: { request: { ...ID, spec: { placementGroup: { placementGroupId: 'pg-1' } } } },
      want: { changed: { 'spec.zoneId': undefined, 'spec.placementGroup': { placementGroupId: 'pg-1' } } },
    },
  ],
  [
    'a scalar member replaces a stored message member',
    {
      given: { storedSpec: { zoneId: null, placementGroup: { placementGroupId: 'pg-1', partition: 2 } }, request: { ...ID, spec: { zoneId: 'zone-b' } } },
      want: { changed: { 'spec.placementGroup': undefined, 'spec.zoneId': 'zone-b' } },
    },
  ],
  ['a member set to its default value still selects it', { given: { request: { ...ID, spec: { zoneId: '' } } }, want: { changed: { 'spec.zoneId': '' } } }],
  [
    'naming the stored member without setting it clears the oneof',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.zone_id' }, want: { changed: { 'spec.zoneId': undefined } } },
  ],
  ['naming another member leaves the stored member', { given: { request: { ...ID, spec: {} }, mask: 'spec.placement_group' }, want: { changed: {} } }],
  [
    'naming the oneof itself clears whichever member is stored',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.placement' }, want: { changed: { 'spec.zoneId': undefined } } },
  ],
  ['a oneof absent from the request without a mask is kept', { given: { request: { ...ID, spec: { description: 'web' } } }, want: { changed: {} } }],
  [
    'the same message member is patched, not replaced',
    {
      given: {
        storedSpec: { zoneId: null, placementGroup: { placementGroupId: 'pg-1', partition: 2 } },
        request: { ...ID, spec: { placementGroup: { partition: 3 } } },
      },
      want: { changed: { 'spec.zoneId': undefined, 'spec.placementGroup': { placementGroupId: 'pg-1', partition: 3 } } },
    },
  ],
  [
    'naming a field of the same message member resets only that field',
    {
      given: {
        storedSpec: { zoneId: null, placementGroup: { placementGroupId: 'pg-1', partition: 2 } },
        request: { ...ID, spec: { placementGroup: {} } },
        mask: 'spec.placement_group.partition',
      },
      want: { changed: { 'spec.zoneId': undefined, 'spec.placementGroup': { placementGroupId: 'pg-1' } } },
    },
  ],
  [
    'setting a member while naming the other keeps the one set',
    { given: { request: { ...ID, spec: { zoneId: 'zone-c' } }, mask: 'spec.placement_group' }, want: { changed: { 'spec.zoneId': 'zone-c' } } },
  ],
  // OUTPUT_ONLY.
  [
    'an OUTPUT_ONLY structure in the request is ignored',
    { given: { request: { ...ID, status: { state: 'STATE_STOPPED', reconciling: false } } }, want: { changed: {} } },
  ],
  ['naming an OUTPUT_ONLY structure absent from the request does not clear it', { given: { request: ID, mask: 'status' }, want: { changed: {} } }],
  [
    'naming a field inside an OUTPUT_ONLY structure changes nothing',
    { given: { request: { ...ID, status: {} }, mask: 'status.state,status.network_interfaces' }, want: { changed: {} } },
  ],
  [
    'OUTPUT_ONLY timestamps in metadata keep their stored values',
    { given: { request: { metadata: { id: 'computeinstance-1', createdAt: '2030-01-01T00:00:00Z' } }, mask: 'metadata.updated_at' }, want: { changed: {} } },
  ],
  // IMMUTABLE and IDENTIFIER.
  [
    'changing an IMMUTABLE field fails with its path',
    { given: { request: { ...ID, spec: { imageFamily: 'debian12' } } }, want: { immutable: 'spec.image_family' } },
  ],
  ['sending an IMMUTABLE field with its stored value is allowed', { given: { request: { ...ID, spec: { imageFamily: 'ubuntu22' } } }, want: { changed: {} } }],
  [
    'an IMMUTABLE field left default without a mask is kept',
    { given: { request: { ...ID, spec: { description: 'x' } } }, want: { changed: { 'spec.description': 'x' } } },
  ],
  [
    'naming an IMMUTABLE field with a default value fails',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.image_family' }, want: { immutable: 'spec.image_family' } },
  ],
  ['clearing the structure that holds an IMMUTABLE field fails', { given: { request: ID, mask: 'spec' }, want: { immutable: 'spec.image_family' } }],
  [
    'clearing the structure is allowed when its IMMUTABLE field is empty',
    { given: { storedSpec: { imageFamily: null }, request: ID, mask: 'spec' }, want: { changed: { spec: undefined } } },
  ],
  [
    'setting an IMMUTABLE field that was stored empty fails',
    { given: { storedSpec: { imageFamily: null }, request: { ...ID, spec: { imageFamily: 'x' } } }, want: { immutable: 'spec.image_family' } },
  ],
  [
    'naming an IMMUTABLE field with its stored value is allowed',
    { given: { request: { ...ID, spec: { imageFamily: 'ubuntu22' } }, mask: 'spec.image_family' }, want: { changed: {} } },
  ],
  [
    'changing the IMMUTABLE parent_id fails',
    { given: { request: { metadata: { id: 'computeinstance-1', parentId: 'project-2' } } }, want: { immutable: 'metadata.parent_id' } },
  ],
  ['changing the IDENTIFIER id fails', { given: { request: { metadata: { id: 'computeinstance-2' } } }, want: { immutable: 'metadata.id' } }],
  // Unknown names.
  [
    'mask names that are not fields are ignored',
    { given: { request: { ...ID, spec: { resources: {} } }, mask: 'spec.no_such_field,nope,spec.resources.gpu' }, want: { changed: {} } },
  ],
  [
    'JSON (camelCase) names are not field names and are ignored',
    { given: { request: { ...ID, spec: {} }, mask: 'spec.imageFamily,spec.sshKeys' }, want: { changed: {} } },
  ],
  [
    'a wildcard over the resource resets every field it reaches',
    { given: { request: { ...ID, spec: { imageFamily: 'ubuntu22' } }, mask: 'spec.*' }, want: { changed: { spec: { imageFamily: 'ubuntu22' } } } },
  ],
];

describe('applyResetMask on compute Instance', () => {
  test.each(cases)('%s', (_name, { given, want }) => {
    const stored = withSpec(given.storedSpec);
    const run = () =>
      applyResetMask(
        InstanceSchema,
        fromJson(InstanceSchema, stored),
        fromJson(InstanceSchema, given.request),
        given.mask === undefined ? undefined : parseResetMask(given.mask),
      );
    if ('immutable' in want) {
      let caught: unknown;
      try {
        run();
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ImmutableFieldError);
      expect((caught as ImmutableFieldError).fieldPath).toBe(want.immutable);
      return;
    }
    const expected = normalized(applyChanges(normalized(stored) as JsonObject, want.changed));
    expect(toJson(InstanceSchema, run())).toEqual(expected);
  });
});

describe('applyResetMask invariants', () => {
  test('neither the stored message nor the request is modified', () => {
    const stored = fromJson(InstanceSchema, STORED);
    const request = fromJson(InstanceSchema, { ...ID, spec: { secondaryDisks: [{ diskId: 'z' }], ports: { http: {} } } });
    const storedBefore = toJson(InstanceSchema, stored);
    const requestBefore = toJson(InstanceSchema, request);
    applyResetMask(InstanceSchema, stored, request, parseResetMask('spec.(description,ports.http.port)'));
    expect(toJson(InstanceSchema, stored)).toEqual(storedBefore);
    expect(toJson(InstanceSchema, request)).toEqual(requestBefore);
  });

  test('the result shares no list with the request', () => {
    const request = fromJson(InstanceSchema, { ...ID, spec: { sshKeys: ['k9'] } });
    const result = applyResetMask(InstanceSchema, fromJson(InstanceSchema, STORED), request, undefined);
    result.spec?.sshKeys.push('k10');
    expect(request.spec?.sshKeys).toEqual(['k9']);
  });

  test('unknown fields of the stored message are kept', () => {
    const stored = fromJson(InstanceSchema, STORED);
    const unknown = [{ no: 99, wireType: 0, data: new Uint8Array([0x98, 0x06, 0x01]) }];
    stored.$unknown = unknown;
    const result = applyResetMask(InstanceSchema, stored, fromJson(InstanceSchema, { ...ID, spec: { description: 'x' } }), undefined);
    expect(result.$unknown).toEqual(unknown);
  });

  test('an undefined mask behaves as the empty mask', () => {
    const request = fromJson(InstanceSchema, { ...ID, spec: { description: 'x' } });
    const a = applyResetMask(InstanceSchema, fromJson(InstanceSchema, STORED), request, undefined);
    const b = applyResetMask(InstanceSchema, fromJson(InstanceSchema, STORED), request, parseResetMask(''));
    expect(toJson(InstanceSchema, a)).toEqual(toJson(InstanceSchema, b));
  });

  test('the engine is generic: a map of messages holding scalar lists in Operation', () => {
    const stored = fromJson(OperationSchema, { id: 'op-1', requestHeaders: { 'x-a': { values: ['1'] }, 'x-b': { values: ['2'] } } });
    const request = fromJson(OperationSchema, { requestHeaders: { 'x-a': {}, 'x-b': { values: ['3'] } } });
    const result = applyResetMask(OperationSchema, stored, request, parseResetMask('request_headers."x-a".values'));
    expect(toJson(OperationSchema, result)).toEqual({ id: 'op-1', requestHeaders: { 'x-a': {}, 'x-b': { values: ['3'] } } });
  });

  test('the engine works on a message without any annotation', () => {
    const result = applyResetMask(
      OperationSchema,
      create(OperationSchema, { id: 'op-1', description: 'd' }),
      create(OperationSchema),
      parseResetMask('description'),
    );
    expect(toJson(OperationSchema, result)).toEqual({ id: 'op-1' });
  });
});
