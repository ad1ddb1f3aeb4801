import { request as httpRequest } from 'node:http';
import { randomUUID } from 'node:crypto';
import { create, toJson } from '@bufbuild/protobuf';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { InstanceService, UpdateInstanceRequestSchema } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { OperationSchema, type Operation } from '../../../generated/proto/cloud/common/v1/operation_pb.js';
import { ServiceAccountService } from '../../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { parseResetMask, printResetMask } from '../../../src/engines/reset-mask/index.js';
import { expectGrpcError, GrpcTestClient } from '../../support/grpc.js';
import { createInstance, PROJECT, startCloudServer, waitForOperation, type CloudServer } from './fixtures.js';

// How the cloud SDKs send X-ResetMask (issue 19 §2), replayed over every transport the server has:
// the native gRPC path (grpc-js, uncompressed), connect-node's gRPC (grpc-js with gzip) and
// Connect over HTTP/1.1 with repeated header lines. The engine-level table is in
// test/engines/reset-mask/reset-mask.test.ts.

let cloud: CloudServer;
let gzipClient: GrpcTestClient | undefined;
beforeAll(async () => {
  cloud = await startCloudServer({ COMPUTE_WORK_MS: '5' });
  // grpc-js compresses with gzip and says so in grpc-encoding: the native path passes such calls to connect-node.
  gzipClient = new GrpcTestClient(cloud.server.url, { 'grpc.default_compression_algorithm': 2 });
});
afterAll(async () => {
  gzipClient?.close();
  await cloud?.close();
});

const M = InstanceService.method;

type Send = (request: { id: string; description?: string }, maskLines: string[]) => Promise<Operation>;

/** The canonical form the reference gives for merged values (parse each, merge: see the engine table). */
const canonical = (mask: string) => printResetMask(parseResetMask(mask));

/** Connect unary over HTTP/1.1 with each mask value on a header line of its own (node:http keeps arrays apart; fetch would join them). */
function connectOverHttp1(body: unknown, headers: Record<string, string | string[]>): Promise<{ status: number; body: Record<string, unknown> }> {
  const url = new URL(`${cloud.server.url}/${InstanceService.typeName}/Update`);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const transports: [string, () => Send][] = [
  [
    'native gRPC (grpc-js)',
    () => async (request, lines) =>
      (
        await cloud.grpc.call(
          M.update,
          { metadata: { id: request.id }, spec: { description: request.description ?? '' } },
          { token: cloud.admin.token, headers: { 'x-resetmask': lines } },
        )
      ).message,
  ],
  [
    "connect-node's gRPC (grpc-js with gzip)",
    () => async (request, lines) =>
      (
        await gzipClient!.call(
          M.update,
          { metadata: { id: request.id }, spec: { description: request.description ?? '' } },
          { token: cloud.admin.token, headers: { 'x-resetmask': lines } },
        )
      ).message,
  ],
  [
    'Connect over HTTP/1.1',
    () => async (request, lines) => {
      const body = toJson(
        UpdateInstanceRequestSchema,
        create(UpdateInstanceRequestSchema, { metadata: { id: request.id }, spec: { description: request.description ?? '' } }),
      );
      const answer = await connectOverHttp1(body, { authorization: `Bearer ${cloud.admin.token}`, 'x-resetmask': lines });
      if (answer.status !== 200) throw new Error(`HTTP ${answer.status}: ${JSON.stringify(answer.body)}`);
      // The Connect JSON of the fields read here (id, request_headers); `request` is an Any the test does not need.
      return create(OperationSchema, { id: String(answer.body.id), requestHeaders: answer.body.requestHeaders as Operation['requestHeaders'] });
    },
  ],
];

// The vectors: each value alone, empty ones adding nothing, as nebius/gosdk grpcheader merges them.
const vectors: [string, { lines: string[]; want: string; description: string }][] = [
  ['two empty values reset nothing', { lines: ['', ''], want: '', description: 'kept' }],
  // `*` names spec, which the request holds (empty): its fields keep their values (rule 7).
  ['a wildcard and an empty value are the wildcard', { lines: ['*', ''], want: '*', description: 'kept' }],
  ['a mask and an empty value are the mask (unknown names ignored)', { lines: ['a,b.c', ''], want: 'a,b.c', description: 'kept' }],
  ['an empty value and a mask are the mask', { lines: ['', 'spec.description'], want: 'spec.description', description: '' }],
  ['two masks are merged', { lines: ['a,b.c', 'b.d,*.e'], want: canonical('a,b.(c,d),*.e'), description: 'kept' }],
];

describe.each(transports)('X-ResetMask header lines over %s', (_transport, sender) => {
  test.each(vectors)('%s', async (_name, { lines, want, description }) => {
    const send = sender();
    const instance = await createInstance(cloud, `lines-${randomUUID().slice(0, 8)}`, { description: 'kept' }, 'project-masks');
    const id = instance.metadata?.id ?? '';
    const operation = await send({ id }, lines);
    expect(operation.requestHeaders['x-resetmask']?.values).toEqual(want === '' ? undefined : [want]);
    expect((await waitForOperation(cloud.grpc, cloud.admin.token, operation.id)).status?.code).toBe(GrpcStatus.OK);
    const { message: stored } = await cloud.grpc.call(M.get, { id }, { token: cloud.admin.token });
    expect(stored.spec?.description ?? '').toBe(description);
    expect(stored.metadata).toMatchObject({ parentId: 'project-masks', name: instance.metadata?.name });
  });
});

test('a malformed value among several is INVALID_ARGUMENT naming its own position, as the reference reports it', async () => {
  const instance = await createInstance(cloud, 'lines-bad', { description: 'kept' }, 'project-masks');
  const error = await expectGrpcError(
    cloud.grpc.call(M.update, { metadata: { id: instance.metadata?.id ?? '' } }, { token: cloud.admin.token, headers: { 'x-resetmask': ['', '('] } }),
  );
  expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
  expect(error.details).toBe('X-ResetMask: unclosed left brace at position 0 near "\u20DE("');
});

// nebius/pysdk tests/test_updates_and_masks.py (test_update_instance_v2): an Update built from
// metadata.id alone goes out with the full reset mask of every default field and an
// x-idempotency-key (a UUID4, src/nebius/aio/idempotency.py). Replayed byte for byte.
const PYSDK_FULL_UPDATE_MASK = 'metadata.(created_at,labels,name,parent_id,resource_version,updated_at),spec';

describe("the Python SDK's full-update request", () => {
  test('on a service account: name and parent are kept (empty is "unchanged"), labels and spec reset, the mask recorded as sent', async () => {
    const token = cloud.admin.token;
    const { message: created } = await cloud.grpc.call(
      ServiceAccountService.method.create,
      { metadata: { parentId: PROJECT, name: 'pysdk-robot', labels: { team: 'a' } }, spec: { description: 'before' } },
      { token },
    );
    const id = created.resourceId;
    const { message: before } = await cloud.grpc.call(ServiceAccountService.method.get, { id }, { token });
    const { message: operation } = await cloud.grpc.call(
      ServiceAccountService.method.update,
      { metadata: { id } },
      { token, headers: { 'x-resetmask': PYSDK_FULL_UPDATE_MASK, 'x-idempotency-key': randomUUID() } },
    );
    expect(operation.status?.code).toBe(GrpcStatus.OK);
    expect(operation.requestHeaders['x-resetmask']?.values).toEqual([PYSDK_FULL_UPDATE_MASK]);
    const { message: after } = await cloud.grpc.call(ServiceAccountService.method.get, { id }, { token });
    expect(after.metadata).toMatchObject({ id, parentId: PROJECT, name: 'pysdk-robot', labels: {}, createdAt: before.metadata?.createdAt });
    expect(after.metadata?.resourceVersion).toBe((before.metadata?.resourceVersion ?? 0n) + 1n);
    expect(after.spec?.description ?? '').toBe('');
  });

  test('on an instance: the spec is reset entirely and the instance keeps its name and project', async () => {
    const token = cloud.admin.token;
    const instance = await createInstance(cloud, 'pysdk-vm', { description: 'before', sshKeys: ['k1'] }, 'project-masks');
    const id = instance.metadata?.id ?? '';
    const { message: operation } = await cloud.grpc.call(
      M.update,
      { metadata: { id } },
      { token, headers: { 'x-resetmask': PYSDK_FULL_UPDATE_MASK, 'x-idempotency-key': randomUUID() } },
    );
    expect((await waitForOperation(cloud.grpc, token, operation.id)).status?.code).toBe(GrpcStatus.OK);
    const { message: after } = await cloud.grpc.call(M.get, { id }, { token });
    expect(after.metadata).toMatchObject({ parentId: 'project-masks', name: 'pysdk-vm' });
    expect(after.spec?.description ?? '').toBe('');
    expect(after.spec?.sshKeys ?? []).toEqual([]);
  });

  // test_update_list: metadata.id and an empty spec, so the SDK names each default spec field of
  // the public cloud's Instance; names our Instance lacks (filesystems, gpu_cluster, hostname…) are ignored.
  test("on an instance with an empty spec (test_update_list's exact mask): the named fields reset, the rest kept", async () => {
    const mask =
      'metadata.(created_at,labels,name,parent_id,resource_version,updated_at),' +
      'spec.(boot_disk,cloud_init_user_data,filesystems,gpu_cluster,hostname,' +
      'local_disks,network_interfaces,nvl_instance_group_id,preemptible,' +
      'recovery_policy,reservation_policy,resources,secondary_disks,' +
      'service_account_id,stopped)';
    const token = cloud.admin.token;
    const instance = await createInstance(
      cloud,
      'pysdk-list',
      {
        description: 'kept',
        sshKeys: ['k1'],
        resources: { platform: 'cpu-e2', preset: '2vcpu-8gb' },
        secondaryDisks: [{ deviceId: 'sdb', diskId: 'disk-b' }],
        networkInterfaces: [{ name: 'eth0', subnetId: 'subnet-1' }],
        cloudInitUserData: '#cloud-config',
        imageFamily: 'ubuntu',
      },
      'project-masks',
    );
    const id = instance.metadata?.id ?? '';
    const { message: operation } = await cloud.grpc.call(
      M.update,
      { metadata: { id }, spec: {} },
      { token, headers: { 'x-resetmask': mask, 'x-idempotency-key': randomUUID() } },
    );
    expect(operation.requestHeaders['x-resetmask']?.values).toEqual([canonical(mask)]);
    expect((await waitForOperation(cloud.grpc, token, operation.id)).status?.code).toBe(GrpcStatus.OK);
    const { message: after } = await cloud.grpc.call(M.get, { id }, { token });
    expect(after.metadata).toMatchObject({ parentId: 'project-masks', name: 'pysdk-list' });
    expect(after.spec).toMatchObject({
      description: 'kept',
      sshKeys: ['k1'],
      imageFamily: 'ubuntu',
      cloudInitUserData: '',
      secondaryDisks: [],
      networkInterfaces: [],
    });
    expect(after.spec?.resources).toBeUndefined();
  });

  test('a different parent_id is still refused: the parent is immutable', async () => {
    const instance = await createInstance(cloud, 'pysdk-move', {}, 'project-masks');
    const error = await expectGrpcError(
      cloud.grpc.call(
        M.update,
        { metadata: { id: instance.metadata?.id ?? '', parentId: 'project-other' } },
        { token: cloud.admin.token, headers: { 'x-resetmask': PYSDK_FULL_UPDATE_MASK } },
      ),
    );
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(error.serviceError?.details.value).toMatchObject({ violations: [{ field: 'metadata.parent_id' }] });
  });
});
