import { timingSafeEqual, createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { STATUS_CODES } from 'node:http';
import { ROOT } from './paths.js';
import { isLocalClient } from '../services/client-address.js';
import { clientOf } from '../http/request-client.js';
import { Code, ConnectError, createContextKey, type Interceptor } from '@connectrpc/connect';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';
import type { Database } from '../store/database.js';
import { OperationRepository } from '../store/repositories/operation-repository.js';
import { sendReply, type NodeRequest, type NodeResponse } from '../http/reply.js';

/** How a request reached the server: the HTTP version for REST and pages, the RPC protocol for RPCs. */
export type RequestProtocol = 'http1' | 'h2' | 'grpc' | 'grpc-web' | 'connect';

/** The part of knex's tarn pool the pool gauge reads. */
interface PoolStats {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
  max: number;
}

/** The version of the package that runs (package.json is beside dist/ in a checkout and in the image). */
const SERVER_VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version?: string }).version ?? 'unknown';

// A scrape must answer even while the database does not: its own queries give up after this.
const SCRAPE_QUERY_TIMEOUT_MS = 1000;

/**
 * The Prometheus metrics of one server (`GET /metrics`), in a registry of its own: tests build
 * several servers in one process, and prom-client's global registry would mix their series.
 * Labels are bounded: operations are route templates and known RPC methods, never raw paths.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  /** The request series by protocol, then operation, as recorded (read at scrape by `requestCounter` and `durationHistogram`). */
  private readonly series = new Map<string, Map<string, RequestSeries>>();
  /** The same counts and durations in the order they were first recorded (prom-client's series order). */
  private readonly counts: CodeCount[] = [];
  private readonly durations: RequestSeries[] = [];
  private readonly captureBatches: Histogram;
  private readonly captures: Counter<'outcome'>;
  private readonly signIns: Counter<'api' | 'outcome'>;

  constructor(db: Database) {
    collectDefaultMetrics({ register: this.registry });
    // prom-client hashes and validates a label object on every inc/observe; per request that was
    // ~2% of the REST read's CPU. The server keeps each series itself (a count per protocol,
    // operation and code; the histogram's buckets per protocol and operation) and the registry reads
    // them as it reads prom-client's metrics: the same names, labels, buckets and text.
    this.registry.registerMetric(requestCounter(this.counts) as unknown as Metric);
    this.registry.registerMetric(durationHistogram(this.durations) as unknown as Metric);
    this.captureBatches = new Histogram({
      name: 'cfs_webhook_capture_batch_size',
      help: 'Captured webhook requests written per group-commit batch (one multi-row INSERT).',
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500],
      registers: [this.registry],
    });
    this.captures = new Counter({
      name: 'cfs_webhook_captures_total',
      help: 'Webhook captures by outcome: stored (acknowledged and committed), truncated (stored with a body cut at WEBHOOK_MAX_BODY), dropped (older captures deleted to keep a route within WEBHOOK_MAX_REQUESTS).',
      labelNames: ['outcome'],
      registers: [this.registry],
    });
    this.signIns = new Counter({
      name: 'cfs_sign_in_attempts_total',
      help: 'Sign-in attempts by API (users: POST /api/auth; publishing: POST /v1/writers/login) and outcome: success, failure (wrong name or password), throttled (refused with 429 before any password check).',
      labelNames: ['api', 'outcome'],
      registers: [this.registry],
    });
    for (const outcome of ['stored', 'truncated', 'dropped']) this.captures.inc({ outcome }, 0);
    for (const api of ['users', 'publishing']) for (const outcome of ['success', 'failure', 'throttled']) this.signIns.inc({ api, outcome }, 0);
    new Gauge({
      name: 'cfs_build_info',
      help: 'Always 1; its labels say what runs: the server version, the Node.js version and the store.',
      labelNames: ['version', 'node_version', 'database'],
      registers: [this.registry],
    }).set({ version: SERVER_VERSION, node_version: process.versions.node, database: db.kind }, 1);
    const operations = new OperationRepository(db.knex);
    new Gauge({
      name: 'cfs_operations_open',
      help: 'Cloud API operations not yet done, by state (pending: waiting for a worker; running: claimed). Absent when the database did not answer the scrape.',
      labelNames: ['state'],
      registers: [this.registry],
      // Every worker reads the same table: across WORKERS the figure is one, not a sum.
      aggregator: 'max',
      async collect() {
        this.reset();
        const counts = await withTimeout(operations.countOpenByState(), SCRAPE_QUERY_TIMEOUT_MS).catch(() => undefined);
        if (!counts) return;
        for (const state of ['pending', 'running']) this.set({ state }, counts[state] ?? 0);
      },
    });
    new Gauge({
      name: 'cfs_db_pool_connections',
      help: `Database connections of the pool by state: used, free, pending_acquire (queries waiting for one), pending_create, max. PGlite has one connection: used is its in-flight work, pending_acquire the queue behind it. Database: ${db.kind}.`,
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        this.reset();
        // knex's client is untyped; its pool is tarn's, and is gone once the store is closed.
        const pool = (db.knex.client as { pool?: PoolStats }).pool;
        if (!pool) return;
        this.set({ state: 'used' }, pool.numUsed());
        this.set({ state: 'free' }, pool.numFree());
        this.set({ state: 'pending_acquire' }, pool.numPendingAcquires());
        this.set({ state: 'pending_create' }, pool.numPendingCreates());
        this.set({ state: 'max' }, pool.max);
      },
    });
  }

  /** Counts one answered request and its duration. */
  recordRequest(protocol: RequestProtocol, operation: string, code: string, seconds: number): void {
    let byOperation = this.series.get(protocol);
    if (!byOperation) this.series.set(protocol, (byOperation = new Map()));
    let entry = byOperation.get(operation);
    if (!entry) {
      byOperation.set(operation, (entry = newSeries(protocol, operation)));
      this.durations.push(entry);
    }
    let count = entry.codes.get(code);
    if (!count) {
      entry.codes.set(code, (count = { labels: { protocol, operation, code }, value: 0 }));
      this.counts.push(count);
    }
    count.value += 1;
    if (!Number.isFinite(seconds)) return;
    let bucket = 0;
    while (bucket < DURATION_BUCKETS.length && seconds > (DURATION_BUCKETS[bucket] ?? Infinity)) bucket++;
    if (bucket < DURATION_BUCKETS.length) entry.buckets[bucket] = (entry.buckets[bucket] ?? 0) + 1;
    entry.sum += seconds;
    entry.count += 1;
  }

  /** Records one committed capture batch: its size, and what it stored, truncated and dropped. */
  observeCaptureBatch(batch: { size: number; stored: number; truncated: number; dropped: number }): void {
    this.captureBatches.observe(batch.size);
    if (batch.stored > 0) this.captures.inc({ outcome: 'stored' }, batch.stored);
    if (batch.truncated > 0) this.captures.inc({ outcome: 'truncated' }, batch.truncated);
    if (batch.dropped > 0) this.captures.inc({ outcome: 'dropped' }, batch.dropped);
  }

  /** Records how one sign-in ended. */
  observeSignIn(api: 'users' | 'publishing', outcome: 'success' | 'failure' | 'throttled'): void {
    this.signIns.inc({ api, outcome });
  }
}

const REQUESTS_NAME = 'cfs_requests_total';
const REQUESTS_HELP =
  'Requests answered, by protocol, operation (METHOD route template, or RPC service/method) and code (HTTP status; gRPC code name for RPC protocols).';
const DURATION_NAME = 'cfs_request_duration_seconds';
const DURATION_HELP = 'Time from the request head to the end of the response, by protocol and operation.';
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface CodeCount {
  labels: { protocol: string; operation: string; code: string };
  value: number;
}

/** One (protocol, operation): its request count per code and its duration histogram (per bucket, not cumulative). */
interface RequestSeries {
  labels: { protocol: string; operation: string };
  codes: Map<string, CodeCount>;
  buckets: number[];
  sum: number;
  count: number;
}

function newSeries(protocol: string, operation: string): RequestSeries {
  return { labels: { protocol, operation }, codes: new Map(), buckets: DURATION_BUCKETS.map(() => 0), sum: 0, count: 0 };
}

/**
 * `cfs_requests_total` as the registry reads a prom-client counter (`get`: the text and the JSON the
 * cluster's AggregatorRegistry sums). A reset zeroes the counts; a series shows again once counted.
 */
function requestCounter(counts: CodeCount[]) {
  const values = () => counts.filter((count) => count.value > 0).map((count) => ({ value: count.value, labels: count.labels }));
  return {
    name: REQUESTS_NAME,
    help: REQUESTS_HELP,
    type: 'counter',
    aggregator: 'sum',
    labelNames: ['protocol', 'operation', 'code'],
    get: () => Promise.resolve({ help: REQUESTS_HELP, name: REQUESTS_NAME, type: 'counter', values: values(), aggregator: 'sum' }),
    reset: () => {
      for (const count of counts) count.value = 0;
    },
  };
}

/**
 * `cfs_request_duration_seconds` as the registry reads a prom-client histogram: `getForPromString`
 * for the text (the series labels after `le`, as prom-client writes them), `get` for JSON. A reset
 * zeroes the series; a series shows again once observed.
 */
function durationHistogram(durations: RequestSeries[]) {
  const values = () => {
    const out: Array<{ labels: Record<string, string | number>; sharedLabels: Record<string, string>; value: number; metricName: string; exemplar?: null }> =
      [];
    for (const entry of durations) {
      if (entry.count === 0) continue;
      let cumulative = 0;
      for (let index = 0; index < DURATION_BUCKETS.length; index++) {
        cumulative += entry.buckets[index] ?? 0;
        out.push({
          labels: { le: DURATION_BUCKETS[index] ?? 0 },
          sharedLabels: entry.labels,
          value: cumulative,
          metricName: `${DURATION_NAME}_bucket`,
          exemplar: null,
        });
      }
      out.push({ labels: { le: '+Inf' }, sharedLabels: entry.labels, value: entry.count, metricName: `${DURATION_NAME}_bucket`, exemplar: null });
      out.push({ labels: {}, sharedLabels: entry.labels, value: entry.sum, metricName: `${DURATION_NAME}_sum` });
      out.push({ labels: {}, sharedLabels: entry.labels, value: entry.count, metricName: `${DURATION_NAME}_count` });
    }
    return out;
  };
  const data = (items: unknown[]) => ({ name: DURATION_NAME, help: DURATION_HELP, type: 'histogram', values: items, aggregator: 'sum' });
  return {
    name: DURATION_NAME,
    help: DURATION_HELP,
    type: 'histogram',
    aggregator: 'sum',
    labelNames: ['protocol', 'operation'],
    getForPromString: () => Promise.resolve(data(values())),
    get: () => Promise.resolve(data(values().map(({ sharedLabels, labels, ...value }) => ({ ...value, labels: { ...labels, ...sharedLabels } })))),
    reset: () => {
      for (const entry of durations) {
        entry.buckets.fill(0);
        entry.sum = 0;
        entry.count = 0;
      }
    },
  };
}

/**
 * Serves `GET /metrics` in the Prometheus text format. Open by default (like /healthz: counts and
 * route templates, no data); with `METRICS_TOKEN` set a scrape must send `Authorization: Bearer <token>`.
 */
export function createMetricsEndpoint(
  metrics: ServerMetrics,
  access: { token: string | undefined; public: boolean },
  /** The text to answer; with WORKERS > 1, the whole cluster's (cluster.ts). */
  collect: () => Promise<string> = () => metrics.registry.metrics(),
): (req: NodeRequest, res: NodeResponse) => Promise<void> {
  const expected = access.token === undefined ? undefined : digest(access.token);
  return async (req, res) => {
    // Served for GET and HEAD only (the route table answers other methods 405).
    const head = req.method === 'HEAD';
    const json = (status: number, message: string, headers: Record<string, string> = {}) =>
      sendReply(res, { status, body: { statusCode: status, message, error: STATUS_CODES[status] ?? 'Error' }, headers }, undefined, head);
    if (expected) {
      const match = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''));
      // Compared as digests: equal length, constant time, whatever the caller sent.
      if (!match?.[1] || !timingSafeEqual(digest(match[1]), expected)) return json(401, 'Unauthorized', { 'www-authenticate': 'Bearer realm="metrics"' });
    } else if (!access.public && !isLocalClient(clientOf(req), req.headers)) {
      return json(403, 'Metrics are served to this machine only: set METRICS_TOKEN (or METRICS_PUBLIC=true) to scrape them from elsewhere.');
    }
    let body: string;
    try {
      body = await collect();
    } catch {
      // A partial answer would look like counters resetting; the scrape fails instead (Prometheus: up 0).
      return json(503, 'Service Unavailable', { 'retry-after': '1' });
    }
    sendReply(
      res,
      { status: 200, body: Buffer.from(body), contentType: metrics.registry.contentType, headers: { 'cache-control': 'no-store' } },
      undefined,
      head,
    );
  };
}

/** The RPC protocol of a request on an RPC path, from its Content-Type (Connect GETs have none). */
export function rpcProtocolOf(contentType: string | undefined): RequestProtocol {
  const type = (contentType ?? '').toLowerCase();
  if (type.startsWith('application/grpc-web')) return 'grpc-web';
  if (type.startsWith('application/grpc')) return 'grpc';
  return 'connect';
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** `METHOD template`, the method bounded (HTTP/2 lets a client send any token there). */
export function restOperation(method: string | undefined, template: string): string {
  const known = method !== undefined && METHODS.has(method) ? method : 'OTHER';
  // One string per method and template (both bounded), not a new one per request.
  let byTemplate = OPERATIONS.get(known);
  if (!byTemplate) OPERATIONS.set(known, (byTemplate = new Map()));
  let operation = byTemplate.get(template);
  if (operation === undefined) byTemplate.set(template, (operation = `${known} ${template}`));
  return operation;
}

const OPERATIONS = new Map<string, Map<string, string>>();

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Where the RPC interceptor leaves the outcome of a call served by connect-node, for the request
 * metric: connect-node writes the gRPC status into trailers or the body, out of the server's sight.
 */
export interface RpcOutcome {
  code?: string;
}

export const rpcOutcomeKey = createContextKey<RpcOutcome | undefined>(undefined, { description: 'the RPC outcome the request metric reads' });

/** Records the gRPC code a call ends with (a stream's when it ends) into the call's `RpcOutcome`. */
export const rpcOutcomeInterceptor: Interceptor = (next) => async (req) => {
  const outcome = req.contextValues.get(rpcOutcomeKey);
  if (!outcome) return next(req);
  try {
    const res = await next(req);
    if (!res.stream) {
      outcome.code = 'OK';
      return res;
    }
    return { ...res, message: recordStreamEnd(res.message, outcome) };
  } catch (error) {
    outcome.code = grpcCodeName(ConnectError.from(error).code);
    throw error;
  }
};

async function* recordStreamEnd<T>(messages: AsyncIterable<T>, outcome: RpcOutcome): AsyncIterable<T> {
  try {
    yield* messages;
    outcome.code = 'OK';
  } catch (error) {
    outcome.code = grpcCodeName(ConnectError.from(error).code);
    throw error;
  } finally {
    // Neither the end nor an error: the client went away mid-stream.
    outcome.code ??= 'CANCELED';
  }
}

/** The canonical gRPC name of a code (`NOT_FOUND`), as grpc-go and grpc-java metrics label it. */
export function grpcCodeName(code: number): string {
  if (code === 0) return 'OK';
  const name = Code[code];
  return name === undefined ? String(code) : name.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}
