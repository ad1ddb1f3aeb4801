import type { DescService } from '@bufbuild/protobuf';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { Database } from '../store/database.js';
import type { TokenService } from '../auth/token-service.js';
import type { RestApi } from '../http/rest-api.js';
import type { Route } from './route-table.js';
import type { ServerMetrics } from './metrics.js';
import type { RpcService } from './rpc-routes.js';

/** What every part of the server gets to build itself: shared infrastructure, no globals. */
export interface ModuleContext {
  config: Config;
  db: Database;
  logger: Logger;
  tokens: TokenService;
  /** Logs an unexpected failure with its request id (the client only sees a generic 500). */
  onError(error: unknown, requestId: string): void;
  /** The server's Prometheus metrics; absent with METRICS_ENABLED=false. */
  metrics?: ServerMetrics;
}

/**
 * One API family (users, publishing, webhooks, cloud…): its HTTP routes, RPC services and background
 * work plug in here.
 */
export interface ServerModule {
  name: string;
  /**
   * The HTTP routes this module serves on node:http (HTTP/1.1 and HTTP/2), as data: the server builds
   * one table from every module's (src/server/route-table.ts).
   */
  routes?: Route[];
  /**
   * Connect / gRPC / gRPC-Web services. `served` lists every service of the server once all modules
   * gave theirs (reflection describes them, health knows their names); call it at request time.
   */
  rpc?(served: () => readonly DescService[]): RpcService[];
  /** Contract engines, by contract name, for response validation in tests. */
  restApis?: Record<string, RestApi>;
  /**
   * Called as shutdown begins, before in-flight requests are awaited: end endless responses (event
   * streams) so the server can close without waiting for the grace period.
   */
  drain?(): void;
  /** Starts background work once the server is built. */
  start?(): Promise<void> | void;
  /** Stops background work on shutdown, before the store closes. */
  stop?(): Promise<void> | void;
}
