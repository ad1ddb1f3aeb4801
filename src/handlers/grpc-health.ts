import type { DescService } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from '../../generated/proto/grpc/health/v1/health_pb.js';
import type { Database } from '../store/database.js';
import type { ServerModule } from '../server/module.js';
import { rpcService, type RpcService } from '../server/rpc-routes.js';

export interface HealthOptions {
  db: Database;
  /** False until the server is built and again once it begins to shut down. */
  isServing(): boolean;
  /** A probe query with no answer within this counts as a database that is down. */
  probeTimeoutMs?: number;
  /** How long a probe's answer is reused: health checks from many clients cost one query per period. */
  probeCacheMs?: number;
  /** How often a Watch looks at the status again. */
  watchIntervalMs?: number;
}

/**
 * Whether the database answers, asked with `select 1` at most once per `cacheMs`. A probe that
 * outlives its timeout counts as down, and no new one starts until it has returned: against a
 * black-holed server each probe would hold a pooled connection until the statement timeout.
 */
class DatabaseProbe {
  private last: { at: number; ok: boolean } | undefined;
  private asking: Promise<boolean> | undefined;
  private outstanding = false;

  constructor(
    private readonly db: Database,
    private readonly timeoutMs: number,
    private readonly cacheMs: number,
  ) {}

  ok(): Promise<boolean> {
    if (this.last && performance.now() - this.last.at < this.cacheMs) return Promise.resolve(this.last.ok);
    if (this.outstanding && !this.asking) return Promise.resolve(this.remember(false));
    this.asking ??= this.ask().then((ok) => {
      this.asking = undefined;
      return this.remember(ok);
    });
    return this.asking;
  }

  private remember(ok: boolean): boolean {
    this.last = { at: performance.now(), ok };
    return ok;
  }

  private ask(): Promise<boolean> {
    this.outstanding = true;
    const query = this.db.knex.raw('select 1').then(
      () => true,
      () => false,
    );
    void query.finally(() => (this.outstanding = false));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), this.timeoutMs)));
    return Promise.race([query, timeout]).finally(() => clearTimeout(timer));
  }
}

/**
 * The standard gRPC health service (`grpc.health.v1.Health`) for probes and load balancers: SERVING
 * while the database answers, NOT_SERVING when it does not or once shutdown begins. The empty service
 * name is the whole server; any service this server serves has the server's status; another name is
 * NOT_FOUND for Check and SERVICE_UNKNOWN for Watch, as the protocol says. Public, like reflection.
 * Watch sends the status at once and again on every change; shutdown sends NOT_SERVING and ends it.
 */
export function grpcHealthModule(options: HealthOptions): ServerModule {
  const probe = new DatabaseProbe(options.db, options.probeTimeoutMs ?? 1000, options.probeCacheMs ?? 1000);
  const watchIntervalMs = options.watchIntervalMs ?? 1000;
  const draining = new AbortController();
  const status = async (): Promise<ServingStatus> =>
    options.isServing() && !draining.signal.aborted && (await probe.ok()) ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;

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
