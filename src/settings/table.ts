import {
  bearerToken,
  boolean,
  dnsName,
  duration,
  email,
  httpUrl,
  integer,
  offOrInteger,
  oneOf,
  originList,
  password,
  postgresUrl,
  text,
  trustedProxies,
  type Kind,
} from './kinds.js';

/** The part of the server a setting belongs to; a service is handed its family's settings only (`settingsOf`). */
export type Family = 'server' | 'store' | 'observability' | 'users' | 'publishing' | 'cloud' | 'iam' | 'webhooks';

/** One environment variable, declared once: the `Config` type, the loader and README's table come from this. */
export interface Setting<T, F extends Family = Family> {
  env: string;
  family: F;
  /** One line for README's configuration table (Markdown). */
  doc: string;
  default: T;
  /** Parses a non-empty value, or throws a ConfigError naming `env`. */
  parse(raw: string): T;
  /** The accepted values, as README prints them. */
  allowed: string;
  /** README's Default cell. */
  defaultCell: string;
}

interface Declaration<K, F extends Family> {
  env: string;
  family: F;
  kind: Kind<K>;
  /** `undefined`: unset unless the variable is given. */
  default: NoInfer<K> | undefined;
  doc: string;
  /** Said after the default in README (`30 days`, `off`). */
  note?: string;
  /** README's whole Default cell, where the value would not say it (a default taken from another setting). */
  shown?: string;
}

function setting<K, const F extends Family>(declared: Declaration<K, F> & { default: NoInfer<K> }): Setting<K, F>;
function setting<K, const F extends Family>(declared: Declaration<K, F> & { default: undefined }): Setting<K | undefined, F>;
function setting<K, F extends Family>(declared: Declaration<K, F>): Setting<K | undefined, F> {
  const { env, family, kind, doc, note, shown } = declared;
  const value = declared.default;
  const defaultCell = shown ?? `${value === undefined ? '—' : kind.show(value)}${note ? ` (${note})` : ''}`;
  return { env, family, doc, default: value, parse: (raw) => kind.parse(raw, env), allowed: kind.allowed, defaultCell };
}

const MiB = 1024 * 1024;
const DAY_MS = 86_400_000;

/**
 * Every variable the server reads, in README's order (`npm run docs:settings` rewrites README's table
 * from it; test/settings/readme-table.test.ts fails when they differ). Rules between settings (pairs
 * set together, one needing another) are in rules.ts.
 */
export const SETTINGS = {
  // --- server: the one port, its connections and its shutdown ---
  port: setting({
    env: 'PORT',
    family: 'server',
    kind: integer(0, 65535),
    default: 8080,
    doc: 'the one port for REST, GraphQL, webhooks, gRPC (h2c), gRPC-Web and Connect',
  }),
  host: setting({ env: 'HOST', family: 'server', kind: text('an address'), default: '0.0.0.0', doc: 'listen address' }),
  // --- store ---
  databaseUrl: setting({
    env: 'DATABASE_URL',
    family: 'store',
    kind: postgresUrl(),
    default: undefined,
    doc: 'the PostgreSQL database; unset = embedded PGlite in `DATA_DIR`',
  }),
  dataDir: setting({
    env: 'DATA_DIR',
    family: 'store',
    kind: text('a directory'),
    default: './data',
    doc: "PGlite data directory; created 0700 (an existing one is tightened) and locked to one process (docs/architecture.md, Start-up); a new one is loaded from the build's migrated template ([First start](#first-start))",
  }),
  pgliteSharedBuffersMb: setting({
    env: 'PGLITE_SHARED_BUFFERS_MB',
    family: 'store',
    kind: integer(1, 4096),
    default: 16,
    doc: "PGlite: PostgreSQL's `shared_buffers`, MB (resident in the process); raise it for a large embedded database (docs/operations.md, Memory)",
  }),
  workers: setting({
    env: 'WORKERS',
    family: 'server',
    kind: integer(1, 64),
    default: 1,
    doc: 'server processes sharing `PORT` (node:cluster); more than 1 needs `DATABASE_URL` (docs/operations.md, Scaling out)',
  }),
  dbConnectTimeoutMs: setting({
    env: 'DB_CONNECT_TIMEOUT_MS',
    family: 'store',
    kind: integer(100, 600_000),
    default: 5000,
    doc: 'PostgreSQL: a new connection must be up within this, or the request answers 503 / UNAVAILABLE (docs/architecture.md, Outages)',
  }),
  dbAcquireTimeoutMs: setting({
    env: 'DB_ACQUIRE_TIMEOUT_MS',
    family: 'store',
    kind: integer(100, 600_000),
    default: 10_000,
    doc: 'PostgreSQL: how long a query waits for a pooled connection before 503 / UNAVAILABLE',
  }),
  dbStatementTimeoutMs: setting({
    env: 'DB_STATEMENT_TIMEOUT_MS',
    family: 'store',
    kind: integer(100, 3_600_000),
    default: 10_000,
    doc: 'PostgreSQL: `statement_timeout`; no answer 1 s after it = the server is gone (503 / UNAVAILABLE)',
  }),
  migrate: setting({
    env: 'MIGRATE',
    family: 'store',
    kind: boolean(),
    default: true,
    doc: 'run migrations at start (`cfs-server migrate` / `npm run migrate` runs them alone). `false`: a schema missing migrations of this release keeps the server not ready (`/readyz` 503 naming them, APIs 503) until they are run; a schema ahead (a newer release migrated) is served on (docs/operations.md, Migrations)',
  }),
  migrationLockTimeoutMs: setting({
    env: 'MIGRATION_LOCK_TIMEOUT_MS',
    family: 'store',
    kind: integer(100, 3_600_000),
    default: 45_000,
    doc: "PostgreSQL: how long a start or `migrate` waits for another process's migrations (an advisory lock) before failing with one line naming this setting",
  }),
  databaseListenUrl: setting({
    env: 'DATABASE_LISTEN_URL',
    family: 'store',
    kind: postgresUrl(),
    default: undefined,
    shown: '`DATABASE_URL`',
    doc: 'PostgreSQL: a direct connection (not through PgBouncer in transaction mode) for `LISTEN` and the migration lock, which need a session of their own; needs `DATABASE_URL` (docs/operations.md, PgBouncer)',
  }),
  databasePoolMode: setting({
    env: 'DATABASE_POOL_MODE',
    family: 'store',
    kind: oneOf(['session', 'transaction']),
    default: 'session',
    doc: '`transaction` when `DATABASE_URL` goes through PgBouncer in transaction mode: no `statement_timeout` startup parameter (each statement is cancelled at `DB_STATEMENT_TIMEOUT_MS` instead) and no named prepared statements; needs `DATABASE_LISTEN_URL` (docs/operations.md, PgBouncer)',
  }),
  // --- observability ---
  logLevel: setting({
    env: 'LOG_LEVEL',
    family: 'observability',
    kind: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    default: 'info',
    doc: 'pino level',
  }),
  // --- server ---
  tlsCert: setting({
    env: 'TLS_CERT',
    family: 'server',
    kind: text('a PEM file'),
    default: undefined,
    doc: 'the certificate (chain); with `TLS_KEY`, turns on TLS with ALPN (h2, http/1.1) on `PORT`. Read before the store opens: a missing or unreadable file, one that is not PEM, or a key of another certificate stops the start with one line naming the variable. Plain HTTP sent to that port gets a 400 saying to use `https://`',
  }),
  tlsKey: setting({
    env: 'TLS_KEY',
    family: 'server',
    kind: text('a PEM file'),
    default: undefined,
    doc: "the private key of `TLS_CERT`'s certificate; set both or neither",
  }),
  shutdownDelayMs: setting({
    env: 'SHUTDOWN_DELAY_MS',
    family: 'server',
    kind: integer(0, 600_000),
    // 0: a single process has nothing routing to it that must learn first (docs/operations.md, Shutdown).
    default: 0,
    doc: "after SIGTERM/SIGINT, `/readyz` is 503 at once and the server keeps serving this long before it drains, so balancers stop routing to it first; 0 for a single process, at least the balancer's time to take a replica out behind one ([docs/operations.md](docs/operations.md), Shutdown)",
  }),
  shutdownGraceMs: setting({
    env: 'SHUTDOWN_GRACE_MS',
    family: 'server',
    kind: integer(0, 600_000),
    default: 10_000,
    doc: 'after the delay, how long in-flight requests may finish (HTTP/1.1 `Connection: close`, HTTP/2 GOAWAY, event streams end with `retry:`) before what is left is closed',
  }),
  maxConnectionAgeMs: setting({
    env: 'MAX_CONNECTION_AGE_MS',
    family: 'server',
    kind: offOrInteger(1000, 30 * DAY_MS),
    default: 0,
    note: 'off',
    doc: 'HTTP/2 connections older than this (±10 %) get a GOAWAY and are closed after `MAX_CONNECTION_AGE_GRACE_MS`; HTTP/1.1 ones answer their next request with `Connection: close`: clients reconnect and reach replicas added behind an L4 balancer (gRPC A9)',
  }),
  maxConnectionAgeGraceMs: setting({
    env: 'MAX_CONNECTION_AGE_GRACE_MS',
    family: 'server',
    kind: integer(0, 3_600_000),
    default: 10_000,
    doc: 'how long an HTTP/2 connection told to go away for its age may finish its streams before it is closed',
  }),
  startupTimeoutMs: setting({
    env: 'STARTUP_TIMEOUT_MS',
    family: 'server',
    kind: integer(1000, 600_000),
    default: 60_000,
    doc: "opening the store, migrating and binding must finish within this; else one line naming the setting, exit 1. A new PGlite database made by initdb (the build's template does not match) gets 4× this, as initdb takes over a minute on a busy machine ([First start](#first-start))",
  }),
  firstByteTimeoutMs: setting({
    env: 'FIRST_BYTE_TIMEOUT_MS',
    family: 'server',
    kind: integer(10, 600_000),
    default: 10_000,
    doc: 'a new connection must send its first bytes (or finish the TLS handshake) within this',
  }),
  trustProxy: setting({
    env: 'TRUST_PROXY',
    family: 'server',
    kind: trustedProxies(),
    default: undefined,
    note: 'none',
    doc: "proxies whose word about the client is believed (`1` = the peer is a proxy; `false` = none). The client address (limits, captures' `remoteAddress`, logs) is then found by walking `X-Forwarded-For`/`Forwarded` from the right; `X-Forwarded-Proto`/`-Host` are believed only from them (docs/hardening.md, Behind a proxy or load balancer)",
  }),
  proxyProtocol: setting({
    env: 'PROXY_PROTOCOL',
    family: 'server',
    kind: boolean(),
    default: false,
    doc: "accept PROXY protocol v1/v2 headers (HAProxy `send-proxy-v2`, cloud L4 balancers) from `TRUST_PROXY` peers, before HTTP or TLS; anyone else's closes the connection; needs `TRUST_PROXY`",
  }),
  headersTimeoutMs: setting({
    env: 'HEADERS_TIMEOUT_MS',
    family: 'server',
    kind: integer(10, 600_000),
    default: 20_000,
    doc: 'HTTP/1.1: the request headers must arrive within this (408 and close); at most `REQUEST_TIMEOUT_MS`',
  }),
  requestTimeoutMs: setting({
    env: 'REQUEST_TIMEOUT_MS',
    family: 'server',
    kind: integer(10, 3_600_000),
    default: 300_000,
    doc: 'HTTP/1.1: the whole request, body included, must arrive within this (408 and close)',
  }),
  keepAliveTimeoutMs: setting({
    env: 'KEEP_ALIVE_TIMEOUT_MS',
    family: 'server',
    kind: integer(10, 600_000),
    default: 5000,
    doc: 'an idle HTTP/1.1 keep-alive connection is closed after this (advertised in `Keep-Alive`; Node closes 1 s later)',
  }),
  http2IdleTimeoutMs: setting({
    env: 'HTTP2_IDLE_TIMEOUT_MS',
    family: 'server',
    kind: integer(10, 3_600_000),
    default: 120_000,
    doc: 'an HTTP/2 session without frames gets a GOAWAY after this, and is destroyed after as long again',
  }),
  http2MaxConcurrentStreams: setting({
    env: 'HTTP2_MAX_CONCURRENT_STREAMS',
    family: 'server',
    kind: integer(1, 10_000),
    default: 100,
    doc: 'the `SETTINGS_MAX_CONCURRENT_STREAMS` every HTTP/2 session is told',
  }),
  http2MaxStreamsPerSecond: setting({
    env: 'HTTP2_MAX_STREAMS_PER_SECOND',
    family: 'server',
    kind: integer(1, 1_000_000),
    default: 5000,
    doc: 'new streams one HTTP/2 session may open per second (one address: 4× over its sessions); beyond, GOAWAY `ENHANCE_YOUR_CALM` and the session is closed',
  }),
  http2MaxResetsPerSecond: setting({
    env: 'HTTP2_MAX_RESETS_PER_SECOND',
    family: 'server',
    kind: integer(1, 1_000_000),
    default: 100,
    doc: 'streams of one HTTP/2 session that may end in a reset per second (one address: 4×); beyond, GOAWAY `ENHANCE_YOUR_CALM` and the session is closed (rapid reset)',
  }),
  http2MaxStreamsPerAddress: setting({
    env: 'HTTP2_MAX_STREAMS_PER_ADDRESS',
    family: 'server',
    kind: integer(1, 1_000_000),
    default: 256,
    doc: 'HTTP/2 streams open at once from one client address over all its sessions; beyond, new ones are refused (`REFUSED_STREAM`)',
  }),
  http2StallTimeoutMs: setting({
    env: 'HTTP2_STALL_TIMEOUT_MS',
    family: 'server',
    kind: integer(10, 3_600_000),
    default: 30_000,
    doc: 'an HTTP/2 answer the client leaves unread (window 0) this long is reset, counted as a reset of its session',
  }),
  http2AbuseCooldownMs: setting({
    env: 'HTTP2_ABUSE_COOLDOWN_MS',
    family: 'server',
    kind: integer(0, 3_600_000),
    default: 10_000,
    doc: "after a session of an address was closed for abuse, that address's new connections are closed at once for this long",
  }),
  serviceName: setting({
    env: 'SERVICE_NAME',
    family: 'server',
    kind: text('a name'),
    default: 'contract-first-server',
    doc: "the server's name: `name` of `GET /api`, `GetServerInfo` and the landing page",
  }),
  corsOrigins: setting({
    env: 'CORS_ORIGINS',
    family: 'server',
    kind: originList(),
    default: [],
    doc: 'browser origins allowed cross-origin (`https://app.example.com,http://localhost:5173`, or `*`); unset = no CORS headers',
  }),
  rpcMaxMessageBytes: setting({
    env: 'RPC_MAX_MESSAGE_BYTES',
    family: 'server',
    kind: integer(1024, 256 * MiB),
    default: 4 * MiB,
    note: '4 MiB',
    doc: 'largest gRPC / gRPC-Web / Connect message read or written, after decompression (RESOURCE_EXHAUSTED beyond)',
  }),
  // --- users: the User Account API and its sign-in ---
  accessTokenTtlSeconds: setting({
    env: 'ACCESS_TOKEN_TTL',
    family: 'users',
    kind: integer(1, 365 * 86400),
    default: 30 * 86400,
    note: '30 days',
    doc: 'user access token lifetime, seconds',
  }),
  adminUsername: setting({
    env: 'ADMIN_USERNAME',
    family: 'users',
    kind: text('a user name'),
    default: undefined,
    doc: 'with `ADMIN_PASSWORD`: create this admin at start if the name is free',
  }),
  adminPassword: setting({
    env: 'ADMIN_PASSWORD',
    family: 'users',
    kind: password(),
    default: undefined,
    doc: "the password of `ADMIN_USERNAME`'s admin; set both or neither",
  }),
  signInMaxFailures: setting({
    env: 'SIGNIN_MAX_FAILURES',
    family: 'users',
    kind: integer(1, 1000),
    default: 5,
    doc: 'failed sign-ins per name from one address per window before 429 (per address over all names: 4×)',
  }),
  signInNameMaxFailures: setting({
    env: 'SIGNIN_NAME_MAX_FAILURES',
    family: 'users',
    kind: integer(1, 1_000_000),
    default: 100,
    doc: 'failed sign-ins per name from all addresses per window before 429 (the ceiling above the per name-and-address limit)',
  }),
  signInWindowSeconds: setting({
    env: 'SIGNIN_WINDOW_SECONDS',
    family: 'users',
    kind: integer(1, 86400),
    default: 300,
    doc: 'the throttling window, seconds',
  }),
  // --- cloud API ---
  principalCacheMs: setting({
    env: 'PRINCIPAL_CACHE_MS',
    family: 'cloud',
    kind: integer(0, 60_000),
    default: 1000,
    doc: 'how long the cloud API reuses a resolved bearer token (role changes apply within it; 0 = never)',
  }),
  computeWorkMs: setting({
    env: 'COMPUTE_WORK_MS',
    family: 'cloud',
    kind: integer(0, 3_600_000),
    default: 300,
    doc: 'simulated work of an instance operation',
  }),
  operationRetentionSeconds: setting({
    env: 'OPERATION_RETENTION',
    family: 'cloud',
    kind: duration(),
    default: 7 * 86400,
    doc: 'completed operations older than this are deleted (running ones never)',
  }),
  operationLeaseMs: setting({
    env: 'OPERATION_LEASE_MS',
    family: 'cloud',
    kind: integer(100, 3_600_000),
    default: 30_000,
    doc: "a worker's claim on operation work; a crashed process's work is claimed again after it",
  }),
  operationPollMs: setting({
    env: 'OPERATION_POLL_MS',
    family: 'cloud',
    kind: integer(10, 600_000),
    default: 1000,
    doc: 'how often idle workers look for due work of other processes (local work wakes them at once)',
  }),
  operationMaxWaiters: setting({
    env: 'OPERATION_MAX_WAITERS',
    family: 'cloud',
    kind: integer(1, 1_000_000),
    default: 10_000,
    doc: '`OperationService.Wait` calls one process holds at once (RESOURCE_EXHAUSTED beyond; docs/operations.md)',
  }),
  quotaInstancesPerProject: setting({
    env: 'QUOTA_INSTANCES_PER_PROJECT',
    family: 'cloud',
    kind: integer(0, 1_000_000),
    default: 100,
    doc: 'instances per project (RESOURCE_EXHAUSTED beyond)',
  }),
  listFilterScanRows: setting({
    env: 'LIST_FILTER_SCAN_ROWS',
    family: 'cloud',
    kind: integer(1, 1_000_000),
    default: 10_000,
    doc: 'rows one filtered cloud List page examines at most; a page that reaches it answers short, with a `next_page_token` (docs/cloud-api.md, "List filters")',
  }),
  apiDomain: setting({
    env: 'API_DOMAIN',
    family: 'cloud',
    kind: dnsName(),
    default: undefined,
    doc: "virtual hosts: `<api_service_name>.<API_DOMAIN>` reaches only that service's RPCs",
  }),
  // --- IAM ---
  iamTokenTtlSeconds: setting({
    env: 'IAM_TOKEN_TTL',
    family: 'iam',
    kind: duration(),
    default: 12 * 3600,
    doc: 'lifetime of the access tokens the token exchange issues to service accounts',
  }),
  // --- article publishing ---
  superuserEmail: setting({
    env: 'SUPERUSER_EMAIL',
    family: 'publishing',
    kind: email(),
    default: undefined,
    doc: 'with `SUPERUSER_PASSWORD`: create this publishing superuser at start if the email is free',
  }),
  superuserPassword: setting({
    env: 'SUPERUSER_PASSWORD',
    family: 'publishing',
    kind: password(),
    default: undefined,
    doc: "the password of `SUPERUSER_EMAIL`'s superuser; set both or neither",
  }),
  publishingDeprecationLink: setting({
    env: 'PUBLISHING_DEPRECATION_LINK',
    family: 'publishing',
    kind: text('a URL or path'),
    default: '/docs/publishing.md',
    doc: 'the `Link: …; rel="deprecation"` target of every `/v1` response',
  }),
  // --- webhook inspector ---
  webhookMaxBody: setting({
    env: 'WEBHOOK_MAX_BODY',
    family: 'webhooks',
    kind: integer(0, 64 * MiB),
    default: MiB,
    note: '1 MiB',
    doc: 'captured body bytes kept per request (the rest is counted in `size` and dropped: `truncated`)',
  }),
  webhookMaxRequests: setting({
    env: 'WEBHOOK_MAX_REQUESTS',
    family: 'webhooks',
    kind: integer(1, 10_000_000),
    default: 500,
    doc: 'captured requests kept per route (oldest dropped first)',
  }),
  webhookDefaultTtlSeconds: setting({
    env: 'WEBHOOK_DEFAULT_TTL',
    family: 'webhooks',
    kind: integer(1, 30 * 86400),
    default: 7 * 86400,
    note: '7 days',
    doc: 'route lifetime in seconds when `POST /routes` names none',
  }),
  webhookReadsPerAddress: setting({
    env: 'WEBHOOK_READS_PER_ADDRESS',
    family: 'webhooks',
    kind: integer(1, 10_000),
    default: 4,
    doc: 'inspection pages and HAR exports one client address (IPv6: per /64) may have in flight per process, each until the client has read (nearly) all of it; more answer 429 + `Retry-After` ([docs/hardening.md](docs/hardening.md))',
  }),
  webhookPublicUrl: setting({
    env: 'WEBHOOK_PUBLIC_URL',
    family: 'webhooks',
    kind: httpUrl(),
    default: undefined,
    doc: "the base URL printed in `url`/`inspectUrl` (default: from the request's Host)",
  }),
  webhookBatchMs: setting({
    env: 'WEBHOOK_BATCH_MS',
    family: 'webhooks',
    kind: integer(0, 1000),
    default: 2,
    doc: 'group commit of captures: a batch is written after this many ms or `WEBHOOK_BATCH_ROWS` captures, whichever is first',
  }),
  webhookBatchRows: setting({
    env: 'WEBHOOK_BATCH_ROWS',
    family: 'webhooks',
    // At most 500: one NOTIFY names every capture of a batch and must stay under 8000 bytes.
    kind: integer(1, 500),
    default: 500,
    doc: 'group commit of captures: the most captures one batch writes',
  }),
  webhookSweepIntervalSeconds: setting({
    env: 'WEBHOOK_SWEEP_INTERVAL',
    family: 'webhooks',
    kind: integer(1, 86400),
    default: 60,
    doc: 'seconds between sweeps of expired routes (each process tries; one claims each route)',
  }),
  webhookRouteLimit: setting({
    env: 'WEBHOOK_ROUTE_LIMIT',
    family: 'webhooks',
    kind: integer(1, 1_000_000),
    default: 30,
    doc: 'routes one client address (IPv6: per /64) may create per `WEBHOOK_ROUTE_WINDOW_SECONDS`, counted in the database over all processes; more answer 429 + `Retry-After`',
  }),
  webhookRouteWindowSeconds: setting({
    env: 'WEBHOOK_ROUTE_WINDOW_SECONDS',
    family: 'webhooks',
    kind: integer(1, 86400),
    default: 60,
    doc: 'the window of `WEBHOOK_ROUTE_LIMIT`, seconds',
  }),
  webhookRouteCacheBytes: setting({
    env: 'WEBHOOK_ROUTE_CACHE_BYTES',
    family: 'webhooks',
    kind: integer(64 * 1024, 4096 * MiB),
    default: 32 * MiB,
    note: '32 MiB',
    doc: "bytes (estimated) the capture path's route cache may hold, least recently used dropped first",
  }),
  webhookPageBytes: setting({
    env: 'WEBHOOK_PAGE_BYTES',
    family: 'webhooks',
    kind: integer(64 * 1024, 256 * MiB),
    default: 4 * MiB,
    note: '4 MiB',
    doc: "bytes one page of captures may hold (its items' estimated JSON)",
  }),
  webhookListBodyBytes: setting({
    env: 'WEBHOOK_LIST_BODY_BYTES',
    family: 'webhooks',
    kind: integer(0, 16 * MiB),
    default: 64 * 1024,
    note: '64 KiB',
    doc: 'a list item (page, event, export) carries a body only up to this many bytes; larger ones are left out (with links)',
  }),
  webhookDelayConcurrency: setting({
    env: 'WEBHOOK_DELAY_CONCURRENCY',
    family: 'webhooks',
    kind: integer(1, 10_000),
    default: 20,
    doc: 'delayed answers (`response.delayMs`) pending per route per process; more answer 429',
  }),
  webhookSweepChunk: setting({
    env: 'WEBHOOK_SWEEP_CHUNK',
    family: 'webhooks',
    kind: integer(1, 100_000),
    default: 500,
    doc: 'captures of expired routes deleted per statement by the sweeper',
  }),
  // --- observability: metrics ---
  metricsEnabled: setting({
    env: 'METRICS_ENABLED',
    family: 'observability',
    kind: boolean(),
    default: true,
    doc: 'Prometheus metrics at `GET /metrics` ([docs/operations.md](docs/operations.md))',
  }),
  metricsToken: setting({
    env: 'METRICS_TOKEN',
    family: 'observability',
    kind: bearerToken(),
    default: undefined,
    doc: 'when set, `/metrics` needs `Authorization: Bearer <token>`',
  }),
  metricsPublic: setting({
    env: 'METRICS_PUBLIC',
    family: 'observability',
    kind: boolean(),
    default: false,
    doc: 'without a token, serve `/metrics` to every client; by default only to this machine (loopback, not proxied)',
  }),
};

/** The default of one setting, for code that runs without a loaded configuration (a test's store, a bare router). */
export function defaultOf<K extends keyof typeof SETTINGS>(key: K): (typeof SETTINGS)[K]['default'] {
  return SETTINGS[key].default;
}
