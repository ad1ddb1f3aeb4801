/**
 * Configuration comes from the environment only and is validated once at start: a malformed value
 * stops the process with a message naming the variable, rather than failing later mid-request.
 */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  migrate: boolean;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  serviceName: string;
  accessTokenTtlSeconds: number;
  adminUsername: string | undefined;
  adminPassword: string | undefined;
  signInMaxFailures: number;
  signInWindowSeconds: number;
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  shutdownGraceMs: number;
  // --- article publishing (SPEC §3, docs/publishing.md) ---
  /** The first superuser, created at start when this email is free. */
  superuserEmail: string | undefined;
  superuserPassword: string | undefined;
  /** Where the `Link: <…>; rel="deprecation"` header of every /v1 response points. */
  publishingDeprecationLink: string;
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
  if (adminPassword !== undefined && adminPassword.length < 8) {
    throw new ConfigError('ADMIN_PASSWORD must be at least 8 characters');
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
  if (superuserPassword !== undefined && superuserPassword.length < 8) {
    throw new ConfigError('SUPERUSER_PASSWORD must be at least 8 characters');
  }
  const databaseUrl = optional(env, 'DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// URL');
  }
  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: optional(env, 'HOST') ?? '0.0.0.0',
    databaseUrl,
    dataDir: optional(env, 'DATA_DIR') ?? './data',
    migrate: boolean(env, 'MIGRATE', true),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    serviceName: optional(env, 'SERVICE_NAME') ?? 'user-account-service',
    accessTokenTtlSeconds: integer(env, 'ACCESS_TOKEN_TTL', 30 * 24 * 3600, 1, 365 * 24 * 3600),
    adminUsername,
    adminPassword,
    signInMaxFailures: integer(env, 'SIGNIN_MAX_FAILURES', 5, 1, 1000),
    signInWindowSeconds: integer(env, 'SIGNIN_WINDOW_SECONDS', 300, 1, 86400),
    tlsCert,
    tlsKey,
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 10000, 0, 600000),
    // --- article publishing ---
    superuserEmail,
    superuserPassword,
    publishingDeprecationLink: optional(env, 'PUBLISHING_DEPRECATION_LINK') ?? '/docs/publishing.md',
  };
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
