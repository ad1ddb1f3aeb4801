import { fromBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { createClient, createRouterTransport } from '@connectrpc/connect';
import { DescriptorIndex } from '../../../src/engines/grpc-reflection/descriptor-index.js';
import { reflectionServices } from '../../../src/handlers/grpc-reflection.js';
import { loadConfig } from '../../../src/config.js';
import { rpcRoutes, rpcService, type RpcService } from '../../../src/server/rpc-routes.js';
import { ServerInfoService } from '../../../generated/proto/cloud/common/v1/server_info_service_pb.js';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { ServerReflection } from '../../../generated/proto/grpc/reflection/v1/reflection_pb.js';

const index = new DescriptorIndex([InstanceService, ServerInfoService]);
const names = (files: Uint8Array[] | undefined) => files?.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name);

/** Each lookup answers the declaring file first (then its dependencies), or nothing. */
const lookups: Array<[string, { given: () => Uint8Array[] | undefined; want: string | undefined }]> = [
  ['a service by name', { given: () => index.fileContainingSymbol('cloud.compute.v1.InstanceService'), want: 'cloud/compute/v1/instance_service.proto' }],
  [
    'a method by name',
    { given: () => index.fileContainingSymbol('cloud.common.v1.ServerInfoService.GetServerInfo'), want: 'cloud/common/v1/server_info_service.proto' },
  ],
  ['a message by name', { given: () => index.fileContainingSymbol('cloud.compute.v1.Instance'), want: 'cloud/compute/v1/instance.proto' }],
  ['a message by name with a leading dot', { given: () => index.fileContainingSymbol('.cloud.compute.v1.Instance'), want: 'cloud/compute/v1/instance.proto' }],
  ['a file by name', { given: () => index.fileByFilename('cloud/common/v1/server_info_service.proto'), want: 'cloud/common/v1/server_info_service.proto' }],
  ['nothing for an unknown symbol', { given: () => index.fileContainingSymbol('nope.Nothing'), want: undefined }],
  ['nothing for an unknown file', { given: () => index.fileByFilename('nope.proto'), want: undefined }],
];

describe('DescriptorIndex', () => {
  it.each(lookups)('finds %s', (_name, { given, want }) => {
    expect(names(given())?.[0]).toEqual(want);
  });

  it('answers a file with all its transitive dependencies, each once', () => {
    const files = names(index.fileContainingSymbol('cloud.compute.v1.InstanceService')) ?? [];
    expect(files).toEqual(
      expect.arrayContaining([
        'cloud/compute/v1/instance.proto',
        'cloud/common/v1/operation.proto',
        'cloud/annotations.proto',
        'google/protobuf/descriptor.proto',
      ]),
    );
    expect(new Set(files).size).toBe(files.length);
  });

  it('lists the registered services, sorted', () => {
    expect(index.serviceNames()).toEqual(['cloud.common.v1.ServerInfoService', 'cloud.compute.v1.InstanceService']);
  });
});

describe('reflectionServices', () => {
  it('lists every service served, including ones listed after it', async () => {
    const services: RpcService[] = [
      rpcService(ServerInfoService, {}),
      ...reflectionServices(() => services.map((entry) => entry.service)),
      rpcService(OperationService, {}),
    ];
    const transport = createRouterTransport(rpcRoutes(services, [], loadConfig({}).rpcMaxMessageBytes));
    const client = createClient(ServerReflection, transport);
    async function* one() {
      yield { host: '', messageRequest: { case: 'listServices' as const, value: '*' } };
    }
    const answers = [];
    for await (const answer of client.serverReflectionInfo(one())) answers.push(answer);
    expect(answers).toHaveLength(1);
    const response = answers[0]?.messageResponse;
    expect(response?.case).toBe('listServicesResponse');
    const listed = response?.case === 'listServicesResponse' ? response.value.service.map((service) => service.name) : [];
    expect(listed).toEqual([
      'cloud.common.v1.OperationService',
      'cloud.common.v1.ServerInfoService',
      'grpc.reflection.v1.ServerReflection',
      'grpc.reflection.v1alpha.ServerReflection',
    ]);
  });
});
