import type { DescService } from '@bufbuild/protobuf';
import { createServiceImplSpec, type ConnectError, type ConnectRouter, type Interceptor, type ServiceImpl } from '@connectrpc/connect';
import type { UniversalHandler } from '@connectrpc/connect/protocol';
import type { RegisteredService } from './grpc-fast-path/unary-handler.js';
import { specGrpcMessages } from './grpc-message.js';
import { refuseUnsafeJsonNumbers } from './rpc-json-numbers.js';
import { shapeEarlyErrors } from './rpc-early-errors.js';

/**
 * One RPC service as the server serves it: the same entry feeds connect-node (every protocol), the
 * native gRPC fast path and in-memory tests (`createRouterTransport(rpcRoutes(services))`).
 */
export interface RpcService {
  service: DescService;
  implementation: Partial<ServiceImpl<DescService>>;
  interceptors?: Interceptor[];
  /** Rewraps connect's handlers of this service (e.g. to map a request that does not parse). */
  adaptHandler?(handler: UniversalHandler): UniversalHandler;
  /** Shapes errors raised before the interceptors run (native gRPC path) as the interceptors would. */
  shapeError?(error: ConnectError, requestId: string): ConnectError;
}

/** An RpcService from a typed implementation (checked against its service, then stored type-erased). */
export function rpcService<T extends DescService>(
  service: T,
  implementation: Partial<ServiceImpl<T>>,
  options: Omit<RpcService, 'service' | 'implementation'> = {},
): RpcService {
  return { service, implementation: implementation as Partial<ServiceImpl<DescService>>, ...options };
}

/**
 * Registers the services on a Connect router; `interceptors` run first, around every service's own; `readMaxBytes` is RPC_MAX_MESSAGE_BYTES.
 * Errors raised before the interceptors are shaped by the service's `shapeError` (rpc-early-errors.ts), as on the native fast path.
 * Every handler writes `grpc-message` in the gRPC spec's encoding (src/server/grpc-message.ts) and refuses Connect JSON requests with numbers JSON.parse would not keep (rpc-json-numbers.ts).
 */
export function rpcRoutes(services: readonly RpcService[], interceptors: readonly Interceptor[], readMaxBytes: number): (router: ConnectRouter) => void {
  return (router) => {
    for (const entry of services) {
      const before = router.handlers.length;
      router.service(entry.service, entry.implementation, { interceptors: [...interceptors, ...(entry.interceptors ?? [])] });
      for (let index = before; index < router.handlers.length; index++) {
        let handler = router.handlers[index];
        if (!handler) continue;
        if (entry.adaptHandler) handler = entry.adaptHandler(handler);
        if (entry.shapeError) handler = shapeEarlyErrors(handler, entry.shapeError);
        router.handlers[index] = specGrpcMessages(refuseUnsafeJsonNumbers(handler, { readMaxBytes, shapeError: entry.shapeError }));
      }
    }
  };
}

/** The services as the native gRPC path runs them (the same implementations and interceptors). */
export function grpcUnaryServices(services: readonly RpcService[]): RegisteredService[] {
  return services.map((entry) => ({
    spec: createServiceImplSpec(entry.service, entry.implementation),
    interceptors: entry.interceptors ?? [],
    shapeError: entry.shapeError && ((error, requestId) => entry.shapeError!(error, requestId)),
  }));
}

/** Request paths (`/pkg.Service/Method`) of every method served. */
export function rpcPathsOf(services: readonly RpcService[]): Set<string> {
  return new Set(services.flatMap((entry) => entry.service.methods.map((method) => `/${entry.service.typeName}/${method.name}`)));
}
