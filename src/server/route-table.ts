import type { AppError } from '../errors.js';
import type { NodeRequest, NodeResponse, RestReply } from '../http/reply.js';
import type { RequestProtocol } from './metrics.js';

/** Answers a request and returns (or resolves to) its route template, for the request log and metrics. */
export type RouteHandler = (req: NodeRequest, res: NodeResponse, requestId: string, path: string) => Promise<string> | string;

/** Which paths a route serves: exactly one, a prefix (itself and every path below it), or a pattern. */
export type RoutePaths =
  | { path: string; prefix?: undefined; pattern?: undefined }
  | { prefix: string; path?: undefined; pattern?: undefined }
  | { pattern: RegExp; path?: undefined; prefix?: undefined };

/**
 * How a request is counted in the metrics, when not as `METHOD template` with the HTTP status (RPCs:
 * their protocol, the RPC's name and its gRPC code). Plain functions, so no closure is made per request.
 */
export interface RouteMetrics {
  protocol(req: NodeRequest): RequestProtocol;
  operation(req: NodeRequest, path: string): string;
  code(req: NodeRequest, res: NodeResponse): string;
}

/** One entry of the route table: which requests, who answers them, in which error shape. */
export type Route = RoutePaths & {
  /**
   * The methods served (HEAD is not implied: a GET route that answers HEAD names it). Absent: every
   * method, the handler answering the ones it does not serve (a contract engine, capture).
   */
  methods?: readonly string[];
  handle: RouteHandler;
  /**
   * Every request here, OPTIONS included, is the route's own business (webhook capture): the server adds
   * no CORS headers and answers no preflight.
   */
  corsExempt?: boolean;
  /** Renders an error that escaped `handle` in the shape of this route's API; else the server's own. */
  renderError?(error: AppError): RestReply;
  metrics?: RouteMetrics;
};

/**
 * The server's one route table (STYLE.md rule 11): every module's routes, in the order the modules
 * are listed in src/server/modules.ts. Exact paths are looked up first (one map read), then prefixes and
 * patterns in declaration order; the first route whose paths and methods both fit serves the request.
 * A path some route serves with other methods is a 405 naming them; no route at all, a 404.
 */
export class RouteTable {
  private readonly exact = new Map<string, Route[]>();
  private readonly others: Route[] = [];

  constructor(readonly routes: readonly Route[]) {
    for (const route of routes) {
      if (route.path !== undefined) {
        const same = this.exact.get(route.path);
        if (same) same.push(route);
        else this.exact.set(route.path, [route]);
      } else this.others.push(route);
    }
  }

  /** The route serving `method` on `path` (a path without its query), or undefined. */
  find(method: string, path: string): Route | undefined {
    const exact = this.exact.get(path);
    if (exact) {
      for (const route of exact) if (accepts(route, method)) return route;
    }
    for (const route of this.others) {
      if (accepts(route, method) && servesPath(route, path)) return route;
    }
    return undefined;
  }

  /** The methods routes serve on `path` (for a 405's Allow); empty when no route serves it (a 404). */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const route of [...(this.exact.get(path) ?? []), ...this.others.filter((other) => servesPath(other, path))]) {
      for (const method of route.methods ?? []) methods.add(method);
    }
    return [...methods];
  }
}

function accepts(route: Route, method: string): boolean {
  return route.methods === undefined || route.methods.includes(method);
}

/** Whether a prefix or pattern route covers `path`. A prefix ending in `/` covers only paths below it. */
function servesPath(route: Route, path: string): boolean {
  if (route.path !== undefined) return route.path === path;
  if (route.prefix !== undefined) {
    const { prefix } = route;
    if (!path.startsWith(prefix)) return false;
    return prefix.endsWith('/') || path.length === prefix.length || path.charCodeAt(prefix.length) === 47; // '/'
  }
  return route.pattern.test(path);
}

/** Safe methods of a page or document: GET and the HEAD that answers its headers. */
export const GET_HEAD: readonly string[] = ['GET', 'HEAD'];
