import type { DescService } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from '../../generated/proto/grpc/health/v1/health_pb.js';
import type { Readiness } from '../server/readiness.js';
import type { ServerModule } from '../server/module.js';
import { rpcService, type RpcService } from '../server/rpc-routes.js';

export interface HealthOptions {
  /** The server's readiness, the same answer `/readyz` gives (NOT_SERVING once shutdown begins). */
  readiness: Readiness;
  /** How often a Watch looks at the status again. */
  watchIntervalMs?: number;
}

/**
 * The standard gRPC health service (`grpc.health.v1.Health`) for probes and load balancers: SERVING
 * while the server is ready (as `/readyz` says), NOT_SERVING when it is not or once shutdown begins. The empty service
 * name is the whole server; any service this server serves has the server's status; another name is
 * NOT_FOUND for Check and SERVICE_UNKNOWN for Watch, as the protocol says. Public, like reflection.
 * Watch sends the status at once and again on every change; shutdown sends NOT_SERVING and ends it.
 */
export function grpcHealthModule(options: HealthOptions): ServerModule {
  const watchIntervalMs = options.watchIntervalMs ?? 1000;
  const draining = new AbortController();
  const status = async (): Promise<ServingStatus> =>
    !draining.signal.aborted && (await options.readiness.status()).ready ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;

  const services = (served: () => readonly DescService[]): RpcService[] => {
    const known = (service: string) => service === '' || served().some((candidate) => candidate.typeName === service);
    const health = rpcService(Health, {
      async check(request) {
        if (!known(request.service)) throw new ConnectError(`unknown service ${request.service}`, Code.NotFound);
        return { status: await status() };
      },
      async *watch(request, context) {
        const stop = AbortSignal.any([context.signal, draining.signal]);
        let sent: ServingStatus | undefined;
        while (!stop.aborted) {
          const current = known(request.service) ? await status() : ServingStatus.SERVICE_UNKNOWN;
          if (current !== sent && !stop.aborted) {
            sent = current;
            yield { status: current };
          }
          await delay(watchIntervalMs, stop);
        }
        // Tell a watcher still connected at shutdown to go elsewhere before the stream ends.
        if (draining.signal.aborted && !context.signal.aborted && sent !== ServingStatus.NOT_SERVING) yield { status: ServingStatus.NOT_SERVING };
      },
    });
    return [health];
  };

  return {
    name: 'grpc-health',
    rpc: services,
    drain: () => draining.abort(),
  };
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
