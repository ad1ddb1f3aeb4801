import type { Config } from './config.js';
import type { DatabaseKind } from './store/database.js';

/**
 * The lines a person starting the server reads before the JSON log: where it serves and from which
 * store, and why a first start is slow while it is. Written to stderr, and only when stderr is a
 * terminal: stdout stays one JSON object a line for log collectors, and the log carries the same
 * facts as fields (`url` on `listening`).
 */
export function tellPerson(line: string, stream: { isTTY?: boolean; write(text: string): unknown } = process.stderr): void {
  if (stream.isTTY === true) stream.write(`${line}\n`);
}

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);

/** The URL a person opens: `localhost` for a server on every interface, an IPv6 address in brackets. */
export function servingUrl(config: Pick<Config, 'host' | 'tlsCert'>, port: number): string {
  const scheme = config.tlsCert ? 'https' : 'http';
  const host = WILDCARD_HOSTS.has(config.host) ? 'localhost' : config.host.includes(':') ? `[${config.host}]` : config.host;
  return `${scheme}://${host}:${port}`;
}

/** The store as a person names it; a PostgreSQL URL without its user or password. */
function storeDescription(config: Pick<Config, 'databaseUrl' | 'dataDir'>, kind: DatabaseKind): string {
  if (kind === 'pglite') return config.dataDir.startsWith('memory://') ? 'PGlite in memory (nothing kept)' : `PGlite in ${config.dataDir}`;
  try {
    const url = new URL(config.databaseUrl ?? '');
    return `PostgreSQL at ${url.host}${url.pathname}`;
  } catch {
    return 'PostgreSQL';
  }
}

/** The start line: the URL, where it listens when that is not what the URL says, and the store. */
export function servingLine(config: Pick<Config, 'host' | 'tlsCert' | 'databaseUrl' | 'dataDir'>, port: number, kind: DatabaseKind): string {
  const where = WILDCARD_HOSTS.has(config.host) ? ` (every interface, HOST ${config.host || '0.0.0.0'})` : '';
  return `serving ${servingUrl(config, port)}${where}: REST, GraphQL and gRPC on this one port; store: ${storeDescription(config, kind)}`;
}

/** Said while initdb makes a new embedded database (no matching template in this build). */
export function initdbLine(config: Pick<Config, 'dataDir'>): string {
  const where = config.dataDir.startsWith('memory://') ? 'in memory' : `in ${config.dataDir}`;
  return `creating the embedded database ${where} with initdb (this build has no matching template): several seconds, longer on a busy machine; later starts reopen it in about a second`;
}
