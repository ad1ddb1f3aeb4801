import type { DescService } from '@bufbuild/protobuf';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { Database } from '../store/database.js';
import type { TokenService } from '../auth/token-service.js';
import type { AppError } from '../errors.js';
import type { NodeRequest, NodeResponse, RestReply } from '../http/reply.js';
import type { RestApi } from '../http/rest-api.js';
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
 * One API family (users, publishing, webhooks, cloud…). The server asks each module, in order,
 * whether it owns a request path; RPC services, express routes and background work plug in here.
 */
export interface ServerModule {
  name: string;
  /** Requests this module serves directly on node:http (HTTP/1.1 and HTTP/2). */
  http?: {
    matches(path: string): boolean;
    /** Answers the request; resolves to the route template for the request log. */
    handle(req: NodeRequest, res: NodeResponse, requestId: string): Promise<string> | string;
    /**
     * Paths whose every request, OPTIONS included, is this module's own business (webhook capture):
     * the server adds no CORS headers and answers no preflight there.
     */
    corsExempt?(path: string): boolean;
    /**
     * Renders an error that escaped `handle` in the shape of the API owning `path` (problem details
     * under `/v1`…); without it the server's own shape is used.
     */
    renderError?(error: AppError, path: string): RestReply;
  };
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

/** Serves the paths under `prefix` (the prefix itself included) with one handler. */
export function prefixMatcher(prefix: string): (path: string) => boolean {
  return (path) => path === prefix || path.startsWith(`${prefix}/`) || path.startsWith(`${prefix}?`);
}
