/**
 * Credentials for the cloud API. A service account signs a short JWT with the private key of its
 * key file (the file `cfs iam key generate` writes), exchanges it for an access token
 * (TokenExchangeService.Exchange), and keeps that token fresh in the background: the cache and
 * refresh policy of nebius/gosdk auth/cache.go (CachedServiceTokener) — refresh after 90% of the
 * token's lifetime, retry a failed refresh after 1 s, ×1.5 per failure, at most 1 min apart, and
 * meanwhile keep serving the cached token while it is still valid, so no call fails for it.
 */
import type { Client } from '@connectrpc/connect';
import { Code, ConnectError } from '@connectrpc/connect';
import type { TokenExchangeService } from '../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';

/** Where calls get their bearer token from. */
export interface TokenSource {
  /** A token valid now (from the cache when there is one). */
  token(): Promise<string>;
  /** The server refused `token` (UNAUTHENTICATED): forget it so the next call gets a new one. */
  invalidate?(token: string): void;
  /** Stops background work (refresh timers). */
  close?(): void;
}

/** A fixed token (a user's sign-in token, CFS_TOKEN): nothing to refresh. */
export function staticToken(token: string): TokenSource {
  return { token: () => Promise.resolve(token) };
}

/** The key file `cfs iam key generate` writes (docs/iam.md). */
export interface ServiceAccountKey {
  id: string;
  service_account_id: string;
  private_key: string;
}

/** Parses and checks a key file's text; throws naming the missing field. */
export function parseServiceAccountKey(text: string): ServiceAccountKey {
  const parsed: unknown = JSON.parse(text);
  const file = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  for (const field of ['id', 'service_account_id', 'private_key'] as const) {
    if (typeof file[field] !== 'string' || file[field] === '') throw new Error(`the key file has no "${field}"`);
  }
  return { id: file.id as string, service_account_id: file.service_account_id as string, private_key: file.private_key as string };
}

const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt';

export interface ServiceAccountCredentialsOptions {
  /** Fraction of the token's lifetime after which it is refreshed in the background (gosdk: 0.9). */
  lifetime?: number;
  /** First pause after a failed background refresh (gosdk: 1 s); ×retryMultiplier per failure, up to maxRetryMs. */
  initialRetryMs?: number;
  retryMultiplier?: number;
  maxRetryMs?: number;
  /** Lifetime of each signed JWT (the server accepts at most 1 h). */
  jwtTtlSeconds?: number;
  /** Told about every failed background refresh (the cached token keeps being served meanwhile). */
  onRefreshError?(error: unknown, attempt: number): void;
  now?(): number;
}

interface CachedToken {
  token: string;
  /** ms since the epoch; Infinity when the server gave no expires_in. */
  expiresAt: number;
}

/**
 * A service account's token source: exchange on first use, refresh in the background before the
 * token expires, one exchange at a time (gosdk singleflight), failures of the background refresh
 * retried with backoff without failing calls that still hold a valid token.
 */
export class ServiceAccountCredentials implements TokenSource {
  private cache: CachedToken | undefined;
  private inflight: Promise<CachedToken> | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private failures = 0;
  private closed = false;
  private readonly settings: Required<Omit<ServiceAccountCredentialsOptions, 'onRefreshError'>>;
  /** Exchanges made so far (tests and diagnostics). */
  exchanges = 0;

  constructor(
    private readonly key: ServiceAccountKey,
    private readonly exchange: Client<typeof TokenExchangeService>,
    private readonly options: ServiceAccountCredentialsOptions = {},
  ) {
    this.settings = {
      lifetime: options.lifetime ?? 0.9,
      initialRetryMs: options.initialRetryMs ?? 1000,
      retryMultiplier: options.retryMultiplier ?? 1.5,
      maxRetryMs: options.maxRetryMs ?? 60_000,
      jwtTtlSeconds: options.jwtTtlSeconds ?? 300,
      now: options.now ?? Date.now,
    };
  }

  async token(): Promise<string> {
    const cached = this.cache;
    if (cached && this.settings.now() < cached.expiresAt) return cached.token;
    return (await this.request()).token;
  }

  invalidate(token: string): void {
    if (this.cache?.token === token) this.cache = undefined;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private request(): Promise<CachedToken> {
    this.inflight ??= this.exchangeOnce().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async exchangeOnce(): Promise<CachedToken> {
    const requestedAt = this.settings.now();
    const jwt = await signServiceAccountKeyJwt(this.key, { jwtTtlSeconds: this.settings.jwtTtlSeconds, now: requestedAt });
    this.exchanges++;
    const response = await this.exchange.exchange({
      grantType: GRANT_TYPE,
      requestedTokenType: ACCESS_TOKEN_TYPE,
      subjectToken: jwt,
      subjectTokenType: JWT_TYPE,
    });
    if (response.accessToken === '') throw new ConnectError('the token exchange returned no access token', Code.Unauthenticated);
    const lifetimeMs = Number(response.expiresIn) * 1000;
    const cached: CachedToken = { token: response.accessToken, expiresAt: lifetimeMs > 0 ? requestedAt + lifetimeMs : Infinity };
    this.cache = cached;
    this.failures = 0;
    if (lifetimeMs > 0) this.schedule(lifetimeMs * this.settings.lifetime);
    return cached;
  }

  /** gosdk CachedServiceTokener.Run: refresh at refreshAt; on failure retry after initialRetry × multiplier^n, capped. */
  private schedule(delayMs: number): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.refresh(), Math.max(0, delayMs));
    // A background refresh must not keep a process alive that has nothing else to do.
    (this.timer as { unref?: () => void }).unref?.();
  }

  private async refresh(): Promise<void> {
    try {
      await this.request();
    } catch (error) {
      this.failures++;
      this.options.onRefreshError?.(error, this.failures);
      const { initialRetryMs, retryMultiplier, maxRetryMs } = this.settings;
      this.schedule(this.failures <= 1 ? initialRetryMs : Math.min(maxRetryMs, initialRetryMs * retryMultiplier ** (this.failures - 1)));
    }
  }
}

/**
 * The JWT a service account exchanges for an access token (docs/iam.md): RS256, `kid` = the key id,
 * `iss` = `sub` = the account, `exp` a short time ahead. WebCrypto, so it also runs outside Node.
 */
export async function signServiceAccountKeyJwt(key: ServiceAccountKey, options: { jwtTtlSeconds?: number; now?: number } = {}): Promise<string> {
  const iat = Math.floor((options.now ?? Date.now()) / 1000);
  const header = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: key.id }));
  const claims = { iss: key.service_account_id, sub: key.service_account_id, iat, exp: iat + (options.jwtTtlSeconds ?? 300) };
  const input = `${header}.${base64url(JSON.stringify(claims))}`;
  const signature = await crypto.subtle.sign('RSASSA-PKCS1-v1_5', await importPkcs8(key.private_key), new TextEncoder().encode(input));
  return `${input}.${base64url(new Uint8Array(signature))}`;
}

/** WebCrypto's CryptoKey, spelled so it needs neither the DOM nor Node's type library. */
type SigningKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

function importPkcs8(pem: string): Promise<SigningKey> {
  const body = pem.replace(/-----(BEGIN|END) PRIVATE KEY-----/g, '').replace(/\s+/g, '');
  const der = Uint8Array.from(atob(body), (char) => char.charCodeAt(0));
  return crypto.subtle.importKey('pkcs8', der, { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['sign']);
}

function base64url(data: string | Uint8Array): string {
  const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
