import { status as GrpcStatus } from '@grpc/grpc-js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { expectGrpcError } from '../../support/grpc.js';
import { createInstance, startCloudServer, waitForOperation, type CloudServer } from './fixtures.js';

// The X-ResetMask grammar of the reference Go SDK, seen through a real Update
// (docs/cloud-api.md, "Reset mask grammar"); the parser's whole table is in test/engines/reset-mask/reset-mask.test.ts.

let cloud: CloudServer;
beforeAll(async () => {
  cloud = await startCloudServer({ COMPUTE_WORK_MS: '5' });
});
afterAll(() => cloud?.close());

const M = InstanceService.method;

test('empty groups are accepted like the reference: the mask resets what it names and is recorded in canonical form', async () => {
  const instance = await createInstance(cloud, 'grammar-ok', { description: 'before', sshKeys: ['k1'] }, 'project-masks');
  const id = instance.metadata?.id ?? '';
  const token = cloud.admin.token;
  const { message: operation } = await cloud.grpc.call(
    M.update,
    { metadata: { id }, spec: {} },
    { token, headers: { 'x-resetmask': 'spec . ( description , () , ssh_keys ) , ()' } },
  );
  expect(operation.requestHeaders['x-resetmask']?.values).toEqual(['spec.(description,ssh_keys)']);
  expect((await waitForOperation(cloud.grpc, token, operation.id)).status?.code).toBe(GrpcStatus.OK);
  const { message: updated } = await cloud.grpc.call(M.get, { id }, { token });
  expect(updated.spec?.description).toBe('');
  expect(updated.spec?.sshKeys).toEqual([]);
});

test('a malformed mask is INVALID_ARGUMENT with the reference message: 0-based byte position and marked context', async () => {
  const instance = await createInstance(cloud, 'grammar-bad', { description: 'kept' }, 'project-masks');
  const id = instance.metadata?.id ?? '';
  const cases: [string, string][] = [
    ['spec.(a,', 'unclosed left brace at position 5 near "spec.\u20DE(a,"'],
    ['spec.ports.http-alt', 'tokenizer failure: failed to tokenize: unexpected symbol at position 15 near "c.ports.http\u20DE-alt"'],
    ['spec)', 'unmatched right brace at position 4 near "spec\u20DE)"'],
    ['spec,', 'unexpected end of mask'],
  ];
  for (const [mask, message] of cases) {
    const error = await expectGrpcError(
      cloud.grpc.call(M.update, { metadata: { id }, spec: {} }, { token: cloud.admin.token, headers: { 'x-resetmask': mask } }),
    );
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    // grpc-message is encoded as the gRPC spec asks (src/server/grpc-message.ts), so grpc-js's decodeURI restores it whole.
    expect(error.details).toBe(`X-ResetMask: ${message}`);
    expect(error.serviceError?.details.value).toMatchObject({ violations: [{ field: 'x-resetmask', message }] });
  }
  const { message: stored } = await cloud.grpc.call(M.get, { id }, { token: cloud.admin.token });
  expect(stored.spec?.description).toBe('kept');
});
