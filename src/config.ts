import { parseTrustProxy, type TrustProxy } from './services/client-address.js';
import { isAcceptablePassword, MIN_PASSWORD_LENGTH } from './auth/password-rule.js';

/**
 * Configuration comes from the environment only and is validated once at start: a malformed value
 * stops the process with a message naming the variable, rather than failing later mid-request.
 */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  /** PostgreSQL: a new connection must be up within this (a black-holed server fails fast, 503). */
  dbConnectTimeoutMs: number;
  /** PostgreSQL: a query waits at most this for a pooled connection. */
  dbAcquireTimeoutMs: number;
  /** PostgreSQL: statement_timeout; a statement with no answer a second later is abandoned. */
  dbStatementTimeoutMs: number;
  /** PostgreSQL: the direct (not pooled by PgBouncer) connection for LISTEN and the migration lock; DATABASE_URL by default. */
  databaseListenUrl: string | undefined;
  /** PostgreSQL: `transaction` when DATABASE_URL goes through PgBouncer in transaction mode (docs/operations.md, PgBouncer). */
  databasePoolMode: 'session' | 'transaction';
  migrate: boolean;
  /** PostgreSQL: how long a start or `migrate` waits for another process's migrations (the advisory lock). */
  migrationLockTimeoutMs: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  serviceName: string;
  accessTokenTtlSeconds: number;
  adminUsername: string | undefined;
  adminPassword: string | undefined;
  signInMaxFailures: number;
  signInWindowSeconds: number;
  /** Failed sign-ins per name over all addresses per window (the ceiling above the per name-and-address limit). */
  signInNameMaxFailures: number;
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  shutdownGraceMs: number;
  /** After SIGTERM/SIGINT, how long the server keeps serving with `/readyz` at 503 before it drains (balancers stop routing to it). */
  shutdownDelayMs: number;
  /** HTTP/2 connections older than this (±10 %) get a graceful GOAWAY, HTTP/1.1 ones a `Connection: close`; 0 = never. */
  maxConnectionAgeMs: number;
  /** How long an HTTP/2 connection told to go away for its age may finish its streams before it is closed. */
  maxConnectionAgeGraceMs: number;
  /** A new connection must send its first bytes (cleartext) or finish its TLS handshake within this. */
  firstByteTimeoutMs: number;
  /** HTTP/1.1: the request headers must be complete within this (slow-header clients are closed). */
  headersTimeoutMs: number;
  /** HTTP/1.1: the whole request, body included, must arrive within this. */
  requestTimeoutMs: number;
  /** HTTP/1.1: an idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** HTTP/2: a session that exchanges no frames for this long is closed (GOAWAY), then destroyed after as long again. */
  http2IdleTimeoutMs: number;
  /** HTTP/2: the SETTINGS_MAX_CONCURRENT_STREAMS every session is told; more open streams are refused. */
  http2MaxConcurrentStreams: number;
  /** HTTP/2: new streams one session may open per second (an address 4 times as many over its sessions); more closes the session. */
  http2MaxStreamsPerSecond: number;
  /** HTTP/2: streams of one session that may end in a reset per second (an address 4 times as many); more closes the session (rapid reset). */
  http2MaxResetsPerSecond: number;
  /** HTTP/2: streams open at once from one client address over all its sessions; beyond it new streams are refused. */
  http2MaxStreamsPerAddress: number;
  /** HTTP/2: a stream whose buffered answer the client leaves unread this long is reset (and counts as a reset). */
  http2StallTimeoutMs: number;
  /** HTTP/2: an address whose session was closed for abuse has its new connections refused this long. */
  http2AbuseCooldownMs: number;
  /** Proxies whose word about the client (X-Forwarded-For, Forwarded, PROXY protocol) is believed; undefined = none (docs/hardening.md). */
  trustProxy: TrustProxy | undefined;
  /** Accept PROXY protocol v1/v2 headers from trusted peers on the listener. */
  proxyProtocol: boolean;
  /** Opening the store, migrating and binding the port must finish within this, or the process exits naming the setting at fault. */
  startupTimeoutMs: number;
  // --- article publishing (docs/publishing.md) ---
  /** The first superuser, created at start when this email is free. */
  superuserEmail: string | undefined;
  superuserPassword: string | undefined;
  /** Where the `Link: <…>; rel="deprecation"` header of every /v1 response points. */
  publishingDeprecationLink: string;
  // --- cloud API (docs/cloud-api.md) ---
  /** Simulated duration of an asynchronous compute operation. */
  computeWorkMs: number;
  /** How long the cloud API may reuse a resolved bearer token's principal (0 = never). */
  principalCacheMs: number;
  /** Completed operations older than this are deleted (running ones never). */
  operationRetentionSeconds: number;
  /** How long a worker's claim on an operation lasts without renewal; a crashed process's work is re-claimed after it. */
  operationLeaseMs: number;
  /** How often idle workers look for due work from other processes (local work wakes them at once). */
  operationPollMs: number;
  /** OperationService.Wait calls one process holds at once; more answer RESOURCE_EXHAUSTED. */
  operationMaxWaiters: number;
  /** Instances per project. */
  quotaInstancesPerProject: number;
  /** Rows one filtered cloud List page may examine; a page that reaches it answers short, with a next_page_token. */
  listFilterScanRows: number;
  /** When set, `<api_service_name>.<API_DOMAIN>` reaches only that service family. */
  apiDomain: string | undefined;
  /** Largest RPC message read or written (after decompression), on every RPC protocol. */
  rpcMaxMessageBytes: number;
  // --- IAM (docs/iam.md) ---
  /** Lifetime of the access tokens the token exchange issues to service accounts. */
  iamTokenTtlSeconds: number;
  // --- webhook inspector (docs/webhooks.md) ---
  /** Bytes of a captured body that are stored; the rest is counted in `size` and dropped (`truncated`). */
  webhookMaxBody: number;
  /** Captured requests kept per route; the oldest are dropped first. */
  webhookMaxRequests: number;
  /** Lifetime of a route created without `ttlSeconds`. */
  webhookDefaultTtlSeconds: number;
  /** How often expired routes are swept (each process tries; one claims each route). */
  webhookSweepIntervalSeconds: number;
  /** Group commit: a batch is written after this many ms or `webhookBatchRows` captures, whichever is first. */
  webhookBatchMs: number;
  webhookBatchRows: number;
  /** Base URL used in `url`/`inspectUrl` answers; by default derived from the request's Host header. */
  webhookPublicUrl: string | undefined;
  /** Routes one client address (an IPv6 /64) may create per `webhookRouteWindowSeconds`; more answer 429. */
  webhookRouteLimit: number;
  webhookRouteWindowSeconds: number;
  /** Bytes the in-process route cache of the capture path may hold (least recently used dropped first). */
  webhookRouteCacheBytes: number;
  /** A list item (page, event, export) carries a body only up to this many bytes; larger ones are left out. */
  webhookListBodyBytes: number;
  /** A page of captures ends once its items' estimated JSON reaches this many bytes. */
  webhookPageBytes: number;
  /** Delayed answers (`response.delayMs`) pending at once per route in one process; more answer 429. */
  webhookDelayConcurrency: number;
  /** Pages and HAR exports one client address (an IPv6 /64) may have in flight in one process; more answer 429. */
  webhookReadsPerAddress: number;
  /** Captures of expired routes the sweeper deletes per statement. */
  webhookSweepChunk: number;
  // --- operations (docs/operations.md) ---
  /** Serve Prometheus metrics at `GET /metrics`. */
  metricsEnabled: boolean;
  /** When set, `GET /metrics` requires `Authorization: Bearer <token>`. */
  metricsToken: string | undefined;
  /** Without a token, serve `GET /metrics` to every client, not only to this machine's. */
  metricsPublic: boolean;
  /** Browser origins allowed to call the APIs cross-origin (`*` = any); empty = no CORS headers at all. */
  corsOrigins: string[];
  /** Server processes behind the one port (node:cluster); more than 1 needs PostgreSQL. */
  workers: number;
  /** PGlite only: PostgreSQL's shared_buffers, MB (its resident cache inside the wasm heap). */
  pgliteSharedBuffersMb: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Reads and validates every variable the server knows; unknown values for known names are errors. */
export function loadConfig(env: Env = process.env): Config {
  const adminUsername = optional(env, 'ADMIN_USERNAME');
  const adminPassword = optional(env, 'ADMIN_PASSWORD');
  if ((adminUsername === undefined) !== (adminPassword === undefined)) {
    throw new ConfigError('ADMIN_USERNAME and ADMIN_PASSWORD must be set together');
  }
  if (adminPassword !== undefined && !isAcceptablePassword(adminPassword)) {
    throw new ConfigError(`ADMIN_PASSWORD must be at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  const tlsCert = optional(env, 'TLS_CERT');
  const tlsKey = optional(env, 'TLS_KEY');
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    throw new ConfigError('TLS_CERT and TLS_KEY must be set together');
  }
  const superuserEmail = optional(env, 'SUPERUSER_EMAIL');
  const superuserPassword = optional(env, 'SUPERUSER_PASSWORD');
  if ((superuserEmail === undefined) !== (superuserPassword === undefined)) {
    throw new ConfigError('SUPERUSER_EMAIL and SUPERUSER_PASSWORD must be set together');
  }
  if (superuserEmail !== undefined && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(superuserEmail)) {
    throw new ConfigError(`SUPERUSER_EMAIL must be an email address, got "${superuserEmail}"`);
  }
  if (superuserPassword !== undefined && !isAcceptablePassword(superuserPassword)) {
    throw new ConfigError(`SUPERUSER_PASSWORD must be at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  const databaseUrl = optional(env, 'DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// URL');
  }
  const databaseListenUrl = optional(env, 'DATABASE_LISTEN_URL');
  if (databaseListenUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseListenUrl)) {
    throw new ConfigError('DATABASE_LISTEN_URL must be a postgres:// URL');
  }
  if (databaseListenUrl !== undefined && databaseUrl === undefined) {
    throw new ConfigError('DATABASE_LISTEN_URL needs DATABASE_URL: it is the direct connection beside the pool of DATABASE_URL');
  }
  const databasePoolMode = oneOf(env, 'DATABASE_POOL_MODE', ['session', 'transaction'] as const, 'session');
  if (databasePoolMode === 'transaction' && databaseListenUrl === undefined) {
    throw new ConfigError(
      'DATABASE_POOL_MODE=transaction needs DATABASE_LISTEN_URL: LISTEN and the migration lock need a direct connection to PostgreSQL, not one through PgBouncer',
    );
  }
  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: optional(env, 'HOST') ?? '0.0.0.0',
    databaseUrl,
    dataDir: optional(env, 'DATA_DIR') ?? './data',
    dbConnectTimeoutMs: integer(env, 'DB_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
    dbAcquireTimeoutMs: integer(env, 'DB_ACQUIRE_TIMEOUT_MS', 10_000, 100, 600_000),
    dbStatementTimeoutMs: integer(env, 'DB_STATEMENT_TIMEOUT_MS', 10_000, 100, 3_600_000),
    databaseListenUrl: databaseListenUrl ?? databaseUrl,
    databasePoolMode,
    migrate: boolean(env, 'MIGRATE', true),
    migrationLockTimeoutMs: integer(env, 'MIGRATION_LOCK_TIMEOUT_MS', 45_000, 100, 3_600_000),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    serviceName: optional(env, 'SERVICE_NAME') ?? 'contract-first-server',
    accessTokenTtlSeconds: integer(env, 'ACCESS_TOKEN_TTL', 30 * 24 * 3600, 1, 365 * 24 * 3600),
    adminUsername,
    adminPassword,
    signInMaxFailures: integer(env, 'SIGNIN_MAX_FAILURES', 5, 1, 1000),
    signInWindowSeconds: integer(env, 'SIGNIN_WINDOW_SECONDS', 300, 1, 86400),
    signInNameMaxFailures: integer(env, 'SIGNIN_NAME_MAX_FAILURES', 100, 1, 1_000_000),
    tlsCert,
    tlsKey,
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 10000, 0, 600000),
    // 0: a single process has nothing routing to it that must learn first (docs/operations.md, Shutdown).
    shutdownDelayMs: integer(env, 'SHUTDOWN_DELAY_MS', 0, 0, 600_000),
    ...connectionAge(env),
    ...connectionTimeouts(env),
    ...proxies(env),
    startupTimeoutMs: integer(env, 'STARTUP_TIMEOUT_MS', 60_000, 1000, 600_000),
    // --- article publishing ---
    superuserEmail,
    superuserPassword,
    publishingDeprecationLink: optional(env, 'PUBLISHING_DEPRECATION_LINK') ?? '/docs/publishing.md',
    // --- cloud API ---
    computeWorkMs: integer(env, 'COMPUTE_WORK_MS', 300, 0, 3_600_000),
    principalCacheMs: integer(env, 'PRINCIPAL_CACHE_MS', 1000, 0, 60_000),
    operationRetentionSeconds: duration(env, 'OPERATION_RETENTION', 7 * 24 * 3600),
    operationLeaseMs: integer(env, 'OPERATION_LEASE_MS', 30_000, 100, 3_600_000),
    operationPollMs: integer(env, 'OPERATION_POLL_MS', 1000, 10, 600_000),
    operationMaxWaiters: integer(env, 'OPERATION_MAX_WAITERS', 10_000, 1, 1_000_000),
    quotaInstancesPerProject: integer(env, 'QUOTA_INSTANCES_PER_PROJECT', 100, 0, 1_000_000),
    listFilterScanRows: integer(env, 'LIST_FILTER_SCAN_ROWS', 10_000, 1, 1_000_000),
    apiDomain: apiDomain(env),
    rpcMaxMessageBytes: integer(env, 'RPC_MAX_MESSAGE_BYTES', 4 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    // --- IAM ---
    iamTokenTtlSeconds: duration(env, 'IAM_TOKEN_TTL', 12 * 3600),
    // --- webhook inspector ---
    webhookMaxBody: integer(env, 'WEBHOOK_MAX_BODY', 1024 * 1024, 0, 64 * 1024 * 1024),
    webhookMaxRequests: integer(env, 'WEBHOOK_MAX_REQUESTS', 500, 1, 10_000_000),
    webhookDefaultTtlSeconds: integer(env, 'WEBHOOK_DEFAULT_TTL', 7 * 24 * 3600, 1, 30 * 24 * 3600),
    webhookSweepIntervalSeconds: integer(env, 'WEBHOOK_SWEEP_INTERVAL', 60, 1, 86400),
    webhookBatchMs: integer(env, 'WEBHOOK_BATCH_MS', 2, 0, 1000),
    // At most 500: one NOTIFY names every capture of a batch and must stay under 8000 bytes.
    webhookBatchRows: integer(env, 'WEBHOOK_BATCH_ROWS', 500, 1, 500),
    webhookPublicUrl: webhookPublicUrl(env),
    webhookRouteLimit: integer(env, 'WEBHOOK_ROUTE_LIMIT', 30, 1, 1_000_000),
    webhookRouteWindowSeconds: integer(env, 'WEBHOOK_ROUTE_WINDOW_SECONDS', 60, 1, 86400),
    webhookRouteCacheBytes: integer(env, 'WEBHOOK_ROUTE_CACHE_BYTES', 32 * 1024 * 1024, 64 * 1024, 4 * 1024 * 1024 * 1024),
    webhookListBodyBytes: integer(env, 'WEBHOOK_LIST_BODY_BYTES', 64 * 1024, 0, 16 * 1024 * 1024),
    webhookPageBytes: integer(env, 'WEBHOOK_PAGE_BYTES', 4 * 1024 * 1024, 64 * 1024, 256 * 1024 * 1024),
    webhookDelayConcurrency: integer(env, 'WEBHOOK_DELAY_CONCURRENCY', 20, 1, 10_000),
    webhookReadsPerAddress: integer(env, 'WEBHOOK_READS_PER_ADDRESS', 4, 1, 10_000),
    webhookSweepChunk: integer(env, 'WEBHOOK_SWEEP_CHUNK', 500, 1, 100_000),
    // --- operations ---
    metricsEnabled: boolean(env, 'METRICS_ENABLED', true),
    metricsToken: metricsToken(env),
    metricsPublic: boolean(env, 'METRICS_PUBLIC', false),
    corsOrigins: corsOrigins(env),
    workers: integer(env, 'WORKERS', 1, 1, 64),
    pgliteSharedBuffersMb: integer(env, 'PGLITE_SHARED_BUFFERS_MB', 16, 1, 4096),
  };
}

function metricsToken(env: Env): string | undefined {
  const raw = optional(env, 'METRICS_TOKEN');
  if (raw !== undefined && !/^[\x21-\x7e]{16,}$/.test(raw)) throw new ConfigError('METRICS_TOKEN must be at least 16 printable characters without spaces');
  return raw;
}

/** `CORS_ORIGINS`: `*`, or a comma list of origins (`scheme://host[:port]`, no path), compared lowercase. */
function corsOrigins(env: Env): string[] {
  const raw = optional(env, 'CORS_ORIGINS');
  if (raw === undefined) return [];
  const origins = raw
    .split(',')
    .map((origin) => origin.trim().toLowerCase())
    .filter((origin) => origin !== '');
  for (const origin of origins) {
    if (origin !== '*' && !/^https?:\/\/[a-z0-9.-]+(:\d{1,5})?$|^https?:\/\/\[[0-9a-f:.]+\](:\d{1,5})?$/.test(origin)) {
      throw new ConfigError(
        `CORS_ORIGINS must be * or a comma list of origins like https://app.example.com (scheme, host, optional port, no path), got "${origin}"`,
      );
    }
  }
  if (origins.includes('*') && origins.length > 1) throw new ConfigError('CORS_ORIGINS: * allows every origin and cannot be combined with a list');
  return origins;
}

/** Timeouts of the one port's connections (docs/architecture.md, "One port"). */
function connectionTimeouts(
  env: Env,
): Pick<
  Config,
  | 'firstByteTimeoutMs'
  | 'headersTimeoutMs'
  | 'requestTimeoutMs'
  | 'keepAliveTimeoutMs'
  | 'http2IdleTimeoutMs'
  | 'http2MaxConcurrentStreams'
  | 'http2MaxStreamsPerSecond'
  | 'http2MaxResetsPerSecond'
  | 'http2MaxStreamsPerAddress'
  | 'http2StallTimeoutMs'
  | 'http2AbuseCooldownMs'
> {
  const headersTimeoutMs = integer(env, 'HEADERS_TIMEOUT_MS', 20_000, 10, 600_000);
  const requestTimeoutMs = integer(env, 'REQUEST_TIMEOUT_MS', 300_000, 10, 3_600_000);
  // Node refuses a headers timeout longer than the request timeout it is part of.
  if (headersTimeoutMs > requestTimeoutMs)
    throw new ConfigError(`HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  return {
    firstByteTimeoutMs: integer(env, 'FIRST_BYTE_TIMEOUT_MS', 10_000, 10, 600_000),
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: integer(env, 'KEEP_ALIVE_TIMEOUT_MS', 5_000, 10, 600_000),
    http2IdleTimeoutMs: integer(env, 'HTTP2_IDLE_TIMEOUT_MS', 120_000, 10, 3_600_000),
    http2MaxConcurrentStreams: integer(env, 'HTTP2_MAX_CONCURRENT_STREAMS', 100, 1, 10_000),
    http2MaxStreamsPerSecond: integer(env, 'HTTP2_MAX_STREAMS_PER_SECOND', 5000, 1, 1_000_000),
    http2MaxResetsPerSecond: integer(env, 'HTTP2_MAX_RESETS_PER_SECOND', 100, 1, 1_000_000),
    http2MaxStreamsPerAddress: integer(env, 'HTTP2_MAX_STREAMS_PER_ADDRESS', 256, 1, 1_000_000),
    http2StallTimeoutMs: integer(env, 'HTTP2_STALL_TIMEOUT_MS', 30_000, 10, 3_600_000),
    http2AbuseCooldownMs: integer(env, 'HTTP2_ABUSE_COOLDOWN_MS', 10_000, 0, 3_600_000),
  };
}

/** `TRUST_PROXY` and `PROXY_PROTOCOL` (docs/hardening.md, "Behind a proxy or load balancer"). */
function proxies(env: Env): Pick<Config, 'trustProxy' | 'proxyProtocol'> {
  const raw = optional(env, 'TRUST_PROXY');
  let trustProxy: TrustProxy | undefined;
  if (raw !== undefined && raw !== 'false') {
    try {
      trustProxy = parseTrustProxy(raw);
    } catch (error) {
      throw new ConfigError(
        `TRUST_PROXY must be a hop count (1, 2, …) or a comma list of CIDRs and the names loopback, private, linklocal: ${(error as Error).message}`,
      );
    }
  }
  const proxyProtocol = boolean(env, 'PROXY_PROTOCOL', false);
  if (proxyProtocol && !trustProxy) throw new ConfigError('PROXY_PROTOCOL=true needs TRUST_PROXY: it names the peers allowed to send PROXY headers');
  return { trustProxy, proxyProtocol };
}

/** MAX_CONNECTION_AGE_MS (0 = off, else at least a second) and its grace (gRPC A9's MAX_CONNECTION_AGE_GRACE). */
function connectionAge(env: Env): Pick<Config, 'maxConnectionAgeMs' | 'maxConnectionAgeGraceMs'> {
  const maxConnectionAgeMs = integer(env, 'MAX_CONNECTION_AGE_MS', 0, 0, 30 * 86_400_000);
  if (maxConnectionAgeMs !== 0 && maxConnectionAgeMs < 1000)
    throw new ConfigError(`MAX_CONNECTION_AGE_MS must be 0 (off) or at least 1000, got ${maxConnectionAgeMs}`);
  return { maxConnectionAgeMs, maxConnectionAgeGraceMs: integer(env, 'MAX_CONNECTION_AGE_GRACE_MS', 10_000, 0, 3_600_000) };
}

function webhookPublicUrl(env: Env): string | undefined {
  const raw = optional(env, 'WEBHOOK_PUBLIC_URL');
  if (raw === undefined) return undefined;
  if (!/^https?:\/\/[^/\s]+(\/[^\s]*)?$/.test(raw)) throw new ConfigError(`WEBHOOK_PUBLIC_URL must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

/** A duration as whole seconds (`3600`) or with a unit (`90s`, `30m`, `12h`, `7d`). */
function duration(env: Env, name: string, fallback: number): number {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  const match = /^(\d+)([smhd]?)$/.exec(raw);
  if (!match) throw new ConfigError(`${name} must be seconds or a number with s, m, h or d (e.g. 7d), got "${raw}"`);
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[match[2] ?? ''] ?? 1;
  const value = Number(match[1]) * unit;
  if (value < 1 || value > 3650 * 86400) throw new ConfigError(`${name} must be between 1s and 3650d, got "${raw}"`);
  return value;
}

function apiDomain(env: Env): string | undefined {
  const raw = optional(env, 'API_DOMAIN');
  if (raw === undefined) return undefined;
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i.test(raw)) {
    throw new ConfigError(`API_DOMAIN must be a DNS name (e.g. api.example.com), got "${raw}"`);
  }
  return raw.toLowerCase();
}

function optional(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}
