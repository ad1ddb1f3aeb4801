import { create, type DescService } from '@bufbuild/protobuf';
import * as v1 from '../../generated/proto/grpc/reflection/v1/reflection_pb.js';
import * as v1alpha from '../../generated/proto/grpc/reflection/v1alpha/reflection_pb.js';
import { DescriptorIndex } from '../engines/grpc-reflection/descriptor-index.js';
import { rpcService, type RpcService } from '../server/rpc-routes.js';

/** The fields both reflection versions share (v1alpha is v1 under another package name). */
interface ReflectionRequest {
  host: string;
  messageRequest:
    | { case: 'fileByFilename' | 'fileContainingSymbol' | 'allExtensionNumbersOfType' | 'listServices'; value: string }
    | { case: 'fileContainingExtension'; value: { containingType: string; extensionNumber: number } }
    | { case: undefined; value?: undefined };
}

type ReflectionAnswer =
  | { case: 'fileDescriptorResponse'; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: 'allExtensionNumbersResponse'; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: 'listServicesResponse'; value: { service: Array<{ name: string }> } }
  | { case: 'errorResponse'; value: { errorCode: number; errorMessage: string } };

const NOT_FOUND = 5;
const INVALID_ARGUMENT = 3;

function answer(index: DescriptorIndex, request: ReflectionRequest): ReflectionAnswer {
  const files = (found: Uint8Array[] | undefined, what: string): ReflectionAnswer =>
    found
      ? { case: 'fileDescriptorResponse', value: { fileDescriptorProto: found } }
      : { case: 'errorResponse', value: { errorCode: NOT_FOUND, errorMessage: `${what} not found` } };
  const message = request.messageRequest;
  switch (message.case) {
    case 'listServices':
      return { case: 'listServicesResponse', value: { service: index.serviceNames().map((name) => ({ name })) } };
    case 'fileByFilename':
      return files(index.fileByFilename(message.value), `file ${message.value}`);
    case 'fileContainingSymbol':
      return files(index.fileContainingSymbol(message.value), `symbol ${message.value}`);
    case 'fileContainingExtension':
      return files(
        index.fileContainingExtension(message.value.containingType, message.value.extensionNumber),
        `extension ${message.value.extensionNumber} of ${message.value.containingType}`,
      );
    case 'allExtensionNumbersOfType': {
      const numbers = index.extensionNumbers(message.value);
      return numbers
        ? { case: 'allExtensionNumbersResponse', value: { baseTypeName: message.value, extensionNumber: numbers } }
        : { case: 'errorResponse', value: { errorCode: NOT_FOUND, errorMessage: `type ${message.value} not found` } };
    }
    default:
      return { case: 'errorResponse', value: { errorCode: INVALID_ARGUMENT, errorMessage: 'no message_request set' } };
  }
}

/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha), so grpcurl and `buf curl` discover the
 * services without local protos. It describes every service `served` lists at the time of the call
 * (itself included); it is public (descriptors are no secret, the published contracts say the same)
 * and bypasses the cloud interceptors.
 */
export function reflectionServices(served: () => readonly DescService[]): RpcService[] {
  let cached: { services: readonly DescService[]; index: DescriptorIndex } | undefined;
  const index = () => {
    const services = served();
    if (cached?.services !== services)
      cached = { services, index: new DescriptorIndex(new Map(services.map((service) => [service.typeName, service])).values()) };
    return cached.index;
  };
  const current = rpcService(v1.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield create(v1.ServerReflectionResponseSchema, { validHost: request.host, originalRequest: request, messageResponse: answer(index(), request) });
      }
    },
  });
  const alpha = rpcService(v1alpha.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield create(v1alpha.ServerReflectionResponseSchema, { validHost: request.host, originalRequest: request, messageResponse: answer(index(), request) });
      }
    },
  });
  return [current, alpha];
}
