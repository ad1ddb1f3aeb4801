import type { Config } from '../config.js';
import { ConfigError } from './kinds.js';
import { SETTINGS } from './table.js';

/** A rule between settings, checked once every variable parsed on its own: throws a ConfigError naming them. */
type Rule = (config: Config) => void;

type Key = keyof Config;

const envOf = (key: Key): string => SETTINGS[key].env;

/** Two settings that only mean something together (a user and its password, a certificate and its key). */
function setTogether(first: Key, second: Key): Rule {
  return (config) => {
    if ((config[first] === undefined) !== (config[second] === undefined)) {
      throw new ConfigError(`${envOf(first)} and ${envOf(second)} must be set together`);
    }
  };
}

/** DATABASE_LISTEN_URL is the direct connection beside DATABASE_URL's pool; alone it means nothing. */
function listenUrlNeedsDatabaseUrl(config: Config): void {
  if (config.databaseListenUrl !== undefined && config.databaseUrl === undefined) {
    throw new ConfigError('DATABASE_LISTEN_URL needs DATABASE_URL: it is the direct connection beside the pool of DATABASE_URL');
  }
}

/** Through PgBouncer in transaction mode, LISTEN and the session advisory lock need a direct connection. */
function transactionPoolNeedsListenUrl(config: Config): void {
  if (config.databasePoolMode === 'transaction' && config.databaseListenUrl === undefined) {
    throw new ConfigError(
      'DATABASE_POOL_MODE=transaction needs DATABASE_LISTEN_URL: LISTEN and the migration lock need a direct connection to PostgreSQL, not one through PgBouncer',
    );
  }
}

/** Node refuses a headers timeout longer than the request timeout it is part of. */
function headersWithinRequestTimeout({ headersTimeoutMs, requestTimeoutMs }: Config): void {
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(`HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  }
}

/** Only the peers TRUST_PROXY names may send PROXY protocol headers; without it nobody could. */
function proxyProtocolNeedsTrustProxy(config: Config): void {
  if (config.proxyProtocol && !config.trustProxy)
    throw new ConfigError('PROXY_PROTOCOL=true needs TRUST_PROXY: it names the peers allowed to send PROXY headers');
}

/** Every rule between settings, in the order they are checked. */
export const RULES: readonly Rule[] = [
  setTogether('adminUsername', 'adminPassword'),
  setTogether('tlsCert', 'tlsKey'),
  setTogether('superuserEmail', 'superuserPassword'),
  listenUrlNeedsDatabaseUrl,
  transactionPoolNeedsListenUrl,
  headersWithinRequestTimeout,
  proxyProtocolNeedsTrustProxy,
];

/** Defaults taken from another setting, filled once the rules passed: the LISTEN connection is DATABASE_URL's server unless told otherwise. */
export function withDerivedDefaults(config: Config): Config {
  return { ...config, databaseListenUrl: config.databaseListenUrl ?? config.databaseUrl };
}
