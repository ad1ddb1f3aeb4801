import { ConfigError, loadConfig } from '../src/config.js';

describe('loadConfig', () => {
  test('with an empty environment answers the documented defaults', () => {
    expect(loadConfig({})).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      databaseUrl: undefined,
      dataDir: './data',
      migrate: true,
      logLevel: 'info',
      serviceName: 'contract-first-server',
      accessTokenTtlSeconds: 30 * 24 * 3600,
      adminUsername: undefined,
      adminPassword: undefined,
      signInMaxFailures: 5,
      signInWindowSeconds: 300,
      trustProxy: undefined,
      proxyProtocol: false,
      // Nothing routes to a single process: no delay, and connections are not aged out.
      shutdownDelayMs: 0,
      shutdownGraceMs: 10_000,
      maxConnectionAgeMs: 0,
      maxConnectionAgeGraceMs: 10_000,
    });
  });

  test('reads TRUST_PROXY as a hop count or a list of blocks, and PROXY_PROTOCOL with it', () => {
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toEqual({ hops: 2 });
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBeUndefined();
    const listed = loadConfig({ TRUST_PROXY: '10.0.0.0/8, fd00::/8, loopback', PROXY_PROTOCOL: 'true' });
    expect(listed.trustProxy?.ranges).toHaveLength(4);
    expect(listed.proxyProtocol).toBe(true);
  });

  test('reads every users-related variable', () => {
    const config = loadConfig({
      PORT: '5000',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/app',
      MIGRATE: 'false',
      LOG_LEVEL: 'debug',
      SERVICE_NAME: 'accounts',
      ACCESS_TOKEN_TTL: '60',
      ADMIN_USERNAME: 'root',
      ADMIN_PASSWORD: 'long-enough',
      SIGNIN_MAX_FAILURES: '3',
      SIGNIN_WINDOW_SECONDS: '60',
    });
    expect(config).toMatchObject({
      port: 5000,
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/app',
      migrate: false,
      logLevel: 'debug',
      serviceName: 'accounts',
      accessTokenTtlSeconds: 60,
      adminUsername: 'root',
      adminPassword: 'long-enough',
      signInMaxFailures: 3,
      signInWindowSeconds: 60,
    });
  });

  test('treats an empty value as unset', () => {
    expect(loadConfig({ PORT: '', ADMIN_USERNAME: '', ADMIN_PASSWORD: '' })).toMatchObject({ port: 8080, adminUsername: undefined });
  });

  const invalid: Array<[string, { given: Record<string, string>; want: string }]> = [
    ['a PORT that is not a number', { given: { PORT: 'http' }, want: 'PORT' }],
    ['a PORT with trailing junk', { given: { PORT: '8080x' }, want: 'PORT' }],
    ['a negative PORT', { given: { PORT: '-1' }, want: 'PORT' }],
    ['a PORT above 65535', { given: { PORT: '70000' }, want: 'PORT' }],
    ['ADMIN_USERNAME without ADMIN_PASSWORD', { given: { ADMIN_USERNAME: 'root' }, want: 'ADMIN_PASSWORD' }],
    ['ADMIN_PASSWORD without ADMIN_USERNAME', { given: { ADMIN_PASSWORD: 'long-enough' }, want: 'ADMIN_USERNAME' }],
    ['an ADMIN_PASSWORD under 8 characters', { given: { ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'short' }, want: 'ADMIN_PASSWORD' }],
    ['an unknown LOG_LEVEL', { given: { LOG_LEVEL: 'loud' }, want: 'LOG_LEVEL' }],
    ['a MIGRATE that is not a boolean', { given: { MIGRATE: 'yes' }, want: 'MIGRATE' }],
    ['a zero ACCESS_TOKEN_TTL', { given: { ACCESS_TOKEN_TTL: '0' }, want: 'ACCESS_TOKEN_TTL' }],
    ['an ACCESS_TOKEN_TTL with a unit', { given: { ACCESS_TOKEN_TTL: '30d' }, want: 'ACCESS_TOKEN_TTL' }],
    ['a zero SIGNIN_MAX_FAILURES', { given: { SIGNIN_MAX_FAILURES: '0' }, want: 'SIGNIN_MAX_FAILURES' }],
    ['a fractional SIGNIN_WINDOW_SECONDS', { given: { SIGNIN_WINDOW_SECONDS: '1.5' }, want: 'SIGNIN_WINDOW_SECONDS' }],
    ['a DATABASE_URL of another database', { given: { DATABASE_URL: 'mysql://root@localhost/app' }, want: 'DATABASE_URL' }],
    ['TLS_CERT without TLS_KEY', { given: { TLS_CERT: '/tmp/cert.pem' }, want: 'TLS_KEY' }],
    ['a TRUST_PROXY of everyone', { given: { TRUST_PROXY: 'true' }, want: 'TRUST_PROXY' }],
    ['a TRUST_PROXY block with a bad prefix', { given: { TRUST_PROXY: '10.0.0.0/40' }, want: 'TRUST_PROXY' }],
    ['a TRUST_PROXY of zero hops', { given: { TRUST_PROXY: '0' }, want: 'TRUST_PROXY' }],
    ['PROXY_PROTOCOL without TRUST_PROXY', { given: { PROXY_PROTOCOL: 'true' }, want: 'TRUST_PROXY' }],
    [
      'a DATABASE_LISTEN_URL of another database',
      { given: { DATABASE_URL: 'postgres://a/b', DATABASE_LISTEN_URL: 'mysql://a/b' }, want: 'DATABASE_LISTEN_URL' },
    ],
    ['a DATABASE_LISTEN_URL without DATABASE_URL', { given: { DATABASE_LISTEN_URL: 'postgres://a/b' }, want: 'DATABASE_LISTEN_URL' }],
    ['an unknown DATABASE_POOL_MODE', { given: { DATABASE_POOL_MODE: 'statement' }, want: 'DATABASE_POOL_MODE' }],
    [
      'DATABASE_POOL_MODE=transaction without DATABASE_LISTEN_URL',
      { given: { DATABASE_URL: 'postgres://a/b', DATABASE_POOL_MODE: 'transaction' }, want: 'DATABASE_LISTEN_URL' },
    ],
    ['a MIGRATION_LOCK_TIMEOUT_MS below 100', { given: { MIGRATION_LOCK_TIMEOUT_MS: '10' }, want: 'MIGRATION_LOCK_TIMEOUT_MS' }],
    ['a MAX_CONNECTION_AGE_MS under a second (but not 0, off)', { given: { MAX_CONNECTION_AGE_MS: '500' }, want: 'MAX_CONNECTION_AGE_MS' }],
    ['a SHUTDOWN_DELAY_MS with a unit', { given: { SHUTDOWN_DELAY_MS: '5s' }, want: 'SHUTDOWN_DELAY_MS' }],
  ];

  test('DATABASE_LISTEN_URL defaults to DATABASE_URL; the pool mode to session; the migration lock wait to 45 s', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://pool/app' })).toMatchObject({
      databaseListenUrl: 'postgres://pool/app',
      databasePoolMode: 'session',
      migrationLockTimeoutMs: 45_000,
    });
    expect(
      loadConfig({ DATABASE_URL: 'postgres://bouncer/app', DATABASE_LISTEN_URL: 'postgres://direct/app', DATABASE_POOL_MODE: 'transaction' }),
    ).toMatchObject({
      databaseUrl: 'postgres://bouncer/app',
      databaseListenUrl: 'postgres://direct/app',
      databasePoolMode: 'transaction',
    });
  });

  // The messages operators see (and scripts may match), word for word as before the settings table.
  const messages: Array<[string, { given: Record<string, string>; want: string }]> = [
    ['a PORT that is not a number', { given: { PORT: 'http' }, want: 'PORT must be a whole number, got "http"' }],
    ['a PORT above 65535', { given: { PORT: '70000' }, want: 'PORT must be between 0 and 65535, got 70000' }],
    ['an unknown LOG_LEVEL', { given: { LOG_LEVEL: 'loud' }, want: 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"' }],
    ['a MIGRATE that is not a boolean', { given: { MIGRATE: 'yes' }, want: 'MIGRATE must be true or false, got "yes"' }],
    [
      'an OPERATION_RETENTION in weeks',
      { given: { OPERATION_RETENTION: '2w' }, want: 'OPERATION_RETENTION must be seconds or a number with s, m, h or d (e.g. 7d), got "2w"' },
    ],
    ['a zero IAM_TOKEN_TTL', { given: { IAM_TOKEN_TTL: '0h' }, want: 'IAM_TOKEN_TTL must be between 1s and 3650d, got "0h"' }],
    ['ADMIN_USERNAME alone', { given: { ADMIN_USERNAME: 'root' }, want: 'ADMIN_USERNAME and ADMIN_PASSWORD must be set together' }],
    ['a short ADMIN_PASSWORD', { given: { ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'short' }, want: 'ADMIN_PASSWORD must be at least 8 characters' }],
    [
      'a SUPERUSER_EMAIL that is no address',
      { given: { SUPERUSER_EMAIL: 'root', SUPERUSER_PASSWORD: 'long-enough' }, want: 'SUPERUSER_EMAIL must be an email address, got "root"' },
    ],
    ['a DATABASE_URL of another database', { given: { DATABASE_URL: 'mysql://a/b' }, want: 'DATABASE_URL must be a postgres:// URL' }],
    [
      'a MAX_CONNECTION_AGE_MS under a second',
      { given: { MAX_CONNECTION_AGE_MS: '500' }, want: 'MAX_CONNECTION_AGE_MS must be 0 (off) or at least 1000, got 500' },
    ],
    [
      'a HEADERS_TIMEOUT_MS above REQUEST_TIMEOUT_MS',
      { given: { HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '1000' }, want: 'HEADERS_TIMEOUT_MS (5000) must not exceed REQUEST_TIMEOUT_MS (1000)' },
    ],
    ['a short METRICS_TOKEN', { given: { METRICS_TOKEN: 'short' }, want: 'METRICS_TOKEN must be at least 16 printable characters without spaces' }],
    ['a WEBHOOK_PUBLIC_URL over ftp', { given: { WEBHOOK_PUBLIC_URL: 'ftp://x' }, want: 'WEBHOOK_PUBLIC_URL must be an http(s) URL, got "ftp://x"' }],
    ['an API_DOMAIN with an underscore', { given: { API_DOMAIN: 'a_b' }, want: 'API_DOMAIN must be a DNS name (e.g. api.example.com), got "a_b"' }],
    [
      'PROXY_PROTOCOL alone',
      { given: { PROXY_PROTOCOL: 'true' }, want: 'PROXY_PROTOCOL=true needs TRUST_PROXY: it names the peers allowed to send PROXY headers' },
    ],
    [
      'CORS_ORIGINS of * and a list',
      { given: { CORS_ORIGINS: '*,https://a.example' }, want: 'CORS_ORIGINS: * allows every origin and cannot be combined with a list' },
    ],
  ];

  test.each(messages)('with %s says exactly what is wrong', (_case, { given, want }) => {
    expect(() => loadConfig(given)).toThrow(new ConfigError(want));
  });

  test('normalises what it reads: durations with units, a public URL without its trailing slash, a domain lowercase', () => {
    expect(
      loadConfig({ OPERATION_RETENTION: '90m', IAM_TOKEN_TTL: '3600', WEBHOOK_PUBLIC_URL: 'https://hooks.example/', API_DOMAIN: 'API.Example.com' }),
    ).toMatchObject({
      operationRetentionSeconds: 5400,
      iamTokenTtlSeconds: 3600,
      webhookPublicUrl: 'https://hooks.example',
      apiDomain: 'api.example.com',
    });
  });

  test.each(invalid)('with %s throws a ConfigError naming the variable', (_case, { given, want }) => {
    let thrown: unknown;
    try {
      loadConfig(given);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as Error).message).toContain(want);
  });
});
