import { status as GrpcStatus } from '@grpc/grpc-js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { endpointOfHost } from '../../../src/handlers/cloud/interceptors.js';
import { GrpcTestClient, expectGrpcError } from '../../support/grpc.js';
import { startCloudServer, waitForOperation, type CloudServer } from './fixtures.js';

const HOSTS: Array<[string, { given: { url: string; apiDomain: string | undefined }; want: string | undefined }]> = [
  ['a service host answers its name', { given: { url: 'http://compute.api.test:8080/x', apiDomain: 'api.test' }, want: 'compute' }],
  ['the port is ignored and case folded', { given: { url: 'http://COMPUTE.API.TEST/x', apiDomain: 'api.test' }, want: 'compute' }],
  ['a dotted service name is kept whole', { given: { url: 'http://cpl.iam.api.test/x', apiDomain: 'api.test' }, want: 'cpl.iam' }],
  ['the bare domain is no endpoint', { given: { url: 'http://api.test/x', apiDomain: 'api.test' }, want: undefined }],
  ['a host outside the domain is no endpoint', { given: { url: 'http://127.0.0.1:5000/x', apiDomain: 'api.test' }, want: undefined }],
  ['a look-alike suffix is no endpoint', { given: { url: 'http://compute.evilapi.test/x', apiDomain: 'api.test' }, want: undefined }],
  ['without API_DOMAIN nothing is an endpoint', { given: { url: 'http://compute.api.test/x', apiDomain: undefined }, want: undefined }],
];

test.each(HOSTS)('endpointOfHost: %s', (_name, { given, want }) => {
  expect(endpointOfHost(given.url, given.apiDomain)).toBe(want);
});

describe('with API_DOMAIN set', () => {
  let cloud: CloudServer;
  let compute: GrpcTestClient;
  let iam: GrpcTestClient;
  beforeAll(async () => {
    cloud = await startCloudServer({ API_DOMAIN: 'api.test' });
    compute = new GrpcTestClient(cloud.server.url, { 'grpc.default_authority': `compute.api.test:${cloud.server.port}` });
    iam = new GrpcTestClient(cloud.server.url, { 'grpc.default_authority': 'cpl.iam.api.test' });
  });
  afterAll(async () => {
    compute?.close();
    iam?.close();
    await cloud?.close();
  });

  test('a service answers on its own endpoint and on hosts outside the domain', async () => {
    const token = cloud.admin.token;
    const { message: operation } = await compute.call(InstanceService.method.create, { metadata: { parentId: 'project-ep', name: 'ep-vm' } }, { token });
    await waitForOperation(compute, token, operation.id);
    expect((await cloud.grpc.call(InstanceService.method.get, { id: operation.resourceId }, { token })).message.metadata?.name).toBe('ep-vm');
  });

  test("another service's endpoint answers UNIMPLEMENTED, and its OperationService hides compute's operations", async () => {
    const token = cloud.admin.token;
    const { message: operation } = await compute.call(InstanceService.method.create, { metadata: { parentId: 'project-ep', name: 'ep-vm-2' } }, { token });
    const wrongHost = await expectGrpcError(iam.call(InstanceService.method.get, { id: operation.resourceId }, { token }));
    expect(wrongHost.code).toBe(GrpcStatus.UNIMPLEMENTED);
    expect(wrongHost.details).toMatch(/compute\.api\.test/);
    const hidden = await expectGrpcError(iam.call(OperationService.method.get, { id: operation.id }, { token }));
    expect(hidden.code).toBe(GrpcStatus.NOT_FOUND);
    const listed = await iam.call(OperationService.method.list, { resourceId: operation.resourceId }, { token });
    expect(listed.message.operations).toEqual([]);
    const visible = await compute.call(OperationService.method.list, { resourceId: operation.resourceId }, { token });
    expect(visible.message.operations.map((op) => op.id)).toEqual([operation.id]);
  });
});
