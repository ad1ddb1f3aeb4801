import type { Config } from './config.js';
import { DataDirError } from './store/data-dir-lock.js';

/** What the process was doing when the start failed; it decides which setting the message names. */
export type StartupStep = 'database' | 'build' | 'listen';

/** A setting whose value cannot work, found before the store opens; the message names it. */
export class StartupSettingError extends Error {
  override name = 'StartupSettingError';
}

/** The start did not finish within STARTUP_TIMEOUT_MS. */
export class StartupTimeoutError extends Error {
  override name = 'StartupTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs / 1000} s (STARTUP_TIMEOUT_MS)`);
  }
}

type Settings = Pick<Config, 'port' | 'host' | 'databaseUrl' | 'dataDir'>;

/**
 * One line for an operator: which setting (PORT, HOST, DATABASE_URL, DATA_DIR) is wrong and why,
 * instead of a stack trace. The cause's own message is kept at the end because it is often the only
 * precise part (a PostgreSQL error, a file system code).
 */
export function describeStartupError(error: unknown, step: StartupStep, settings: Settings): string {
  if (error instanceof DataDirError || error instanceof StartupSettingError) return error.message;
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  if (step === 'build') {
    return error instanceof StartupTimeoutError ? `the start did not finish within ${error.timeoutMs / 1000} s (STARTUP_TIMEOUT_MS)` : message;
  }
  if (step === 'listen') {
    const where = `PORT ${settings.port} on HOST ${settings.host}`;
    if (code === 'EADDRINUSE') return `PORT ${settings.port} is already in use (HOST ${settings.host}): stop the other server or choose another PORT`;
    if (code === 'EACCES') return `${where} cannot be bound: permission denied (ports below 1024 need privileges)`;
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return `HOST ${settings.host} is not an address of this machine (${code})`;
    return `${where} cannot be bound: ${message}`;
  }
  if (settings.databaseUrl === undefined) {
    return error instanceof StartupTimeoutError
      ? `DATA_DIR ${settings.dataDir}: the embedded database did not open within ${error.timeoutMs / 1000} s (STARTUP_TIMEOUT_MS)`
      : `DATA_DIR ${settings.dataDir}: ${message}`;
  }
  const target = `DATABASE_URL ${withoutPassword(settings.databaseUrl)}`;
  if (error instanceof StartupTimeoutError) return `${target}: the database did not answer within ${error.timeoutMs / 1000} s (STARTUP_TIMEOUT_MS)`;
  // pg's connect timeout and knex's pool timeout carry no code, only these names and messages.
  if (code === undefined && /^(timeout expired|Connection terminated due to connection timeout)$/.test(message))
    return `${target}: the database did not answer (connection timed out)`;
  if (error instanceof Error && error.name === 'KnexTimeoutError') return `${target}: the database did not answer (no connection within the acquire timeout)`;
  switch (code) {
    case 'ECONNREFUSED':
      return `${target}: connection refused (is PostgreSQL running and listening there?)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `${target}: the host name does not resolve (${code})`;
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${target}: the database cannot be reached (${code})`;
    case '3D000': // invalid_catalog_name
      return `${target}: ${message} (create it, or point DATABASE_URL at an existing database)`;
    case '28P01': // invalid_password
    case '28000': // invalid_authorization_specification
      return `${target}: authentication failed (${message})`;
    default:
      return `${target}: ${message}`;
  }
}

/** The URL as logged: a password never reaches stderr. */
function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/** The code of a Node system error or a PostgreSQL error; Node's AggregateError (IPv4 and IPv6 tried) carries it on its parts. */
function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  if ('code' in error && typeof error.code === 'string') return error.code;
  if (error instanceof AggregateError) {
    for (const part of error.errors) {
      const code = errorCode(part);
      if (code !== undefined) return code;
    }
  }
  return undefined;
}
