import { createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { decodeProtectedHeader, jwtVerify, type ProtectedHeaderParameters } from 'jose';
import type { Knex } from 'knex';
import { canonicalJwsProblem } from '../engines/service-account-jwt/index.js';
import { AppError } from '../errors.js';

/** Who a token was issued to; the audience keeps tokens of one API family out of another. */
export type TokenAudience = 'account' | 'publishing' | 'service-account';

export interface TokenClaims {
  sub: string;
  aud: TokenAudience;
  iss: string;
  iat: number;
  exp: number;
  [claim: string]: unknown;
}

interface SigningKey {
  kid: string;
  privateKey: KeyObject | undefined;
  publicKey: KeyObject;
  createdAt: number;
  retired: boolean;
}

// The algorithm is pinned: a token whose header names anything else is refused before any crypto.
const ALG = 'EdDSA';
/**
 * The `iss` of every token this platform issues, required on verification: a token signed for some
 * other issuer is refused even if it somehow carries one of our key ids. Tokens issued before the
 * claim existed (no `iss`) are refused too; their holders sign in again.
 */
export const TOKEN_ISSUER = 'contract-first-server';
const CACHE_LIMIT = 10_000;

/**
 * The one token service: signs every access token the platform issues (Ed25519 JWS) and verifies
 * them with jose. Keys live in the database so every process agrees; rotation adds a key and
 * retires the old one, which keeps verifying live tokens (the JWKS lists all of them).
 * Verified tokens are cached until they expire, so a hot client costs one map lookup per request
 * (jose's verify is async WebCrypto, ~0.3-1 ms; only a token's first use pays it). Signing stays
 * synchronous node:crypto: callers sign inside synchronous code, and a signature needs no parsing.
 */
export class TokenService {
  private keys = new Map<string, SigningKey>();
  private current: SigningKey | undefined;
  /**
   * Verified tokens by the last characters of their signature: a Map hashes its key, and hashing the
   * whole token (~600 characters, a new string per request) was ~1.5% of a REST read's instructions.
   * Each entry keeps the whole token, compared on every hit.
   */
  private verified = new Map<string, { token: string; claims: TokenClaims }>();
  private lastReload = 0;

  private constructor(private readonly knex: Knex) {}

  /** Loads the signing keys, generating the first one when the database has none. */
  static async create(knex: Knex): Promise<TokenService> {
    const service = new TokenService(knex);
    await service.reload();
    if (!service.current) {
      await service.rotate();
    }
    return service;
  }

  /** Adds a new signing key and retires the previous ones (they still verify existing tokens). */
  async rotate(): Promise<string> {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const kid = randomUUID();
    await this.knex.transaction(async (trx) => {
      await trx('signing_keys').whereNull('retired_at').update({ retired_at: trx.fn.now() });
      await trx('signing_keys').insert({
        kid,
        algorithm: ALG,
        private_key_pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        public_key_pem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      });
    });
    await this.reload();
    return kid;
  }

  /** Signs `claims` for `ttlSeconds`. */
  sign(claims: { sub: string; aud: TokenAudience } & Record<string, unknown>, ttlSeconds: number): string {
    const key = this.current;
    if (!key?.privateKey) throw new AppError('internal', 'no signing key');
    const iat = Math.floor(Date.now() / 1000);
    const header = base64url(JSON.stringify({ alg: ALG, typ: 'JWT', kid: key.kid }));
    const payload = base64url(JSON.stringify({ ...claims, iss: TOKEN_ISSUER, iat, exp: iat + ttlSeconds }));
    const signature = sign(null, Buffer.from(`${header}.${payload}`), key.privateKey).toString('base64url');
    return `${header}.${payload}.${signature}`;
  }

  /**
   * Verifies a token for one audience and returns its claims, or throws `unauthenticated`.
   * Refused: another algorithm, an unknown key, a bad signature, any segment not canonical base64url,
   * `iss` not ours, `exp` past, `nbf` ahead, a missing `sub`/`aud`/`exp`/`iat`.
   * A key id this process has not seen yet (rotated by another process) triggers one reload.
   */
  async verify(token: string, audience: TokenAudience): Promise<TokenClaims> {
    const cached = this.verifyCached(token, audience);
    if (cached) return cached;
    if (canonicalJwsProblem(token) !== undefined) throw unauthenticated();
    let header: ProtectedHeaderParameters;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      throw unauthenticated();
    }
    if (header.alg !== ALG || typeof header.kid !== 'string') throw unauthenticated();
    let key = this.keys.get(header.kid);
    if (!key && Date.now() - this.lastReload > 1000) {
      await this.reload();
      key = this.keys.get(header.kid);
    }
    if (!key) throw unauthenticated();
    let claims: Record<string, unknown>;
    try {
      ({ payload: claims } = await jwtVerify(token, key.publicKey, {
        algorithms: [ALG],
        issuer: TOKEN_ISSUER,
        typ: 'JWT',
        requiredClaims: ['sub', 'aud', 'exp', 'iat'],
      }));
    } catch {
      throw unauthenticated();
    }
    if (typeof claims.sub !== 'string' || typeof claims.aud !== 'string') throw unauthenticated();
    const typed = claims as TokenClaims;
    if (this.verified.size >= CACHE_LIMIT) this.verified.clear();
    this.verified.set(cacheKeyOf(token), { token, claims: typed });
    return this.checkClaims(typed, audience, token);
  }

  /**
   * `verify` for a token already verified by this process, without a promise: its claims (expiry and
   * audience checked now, as `verify` checks them), undefined when the token is not in the cache
   * (then `verify` must be asked), or throws `unauthenticated`.
   */
  verifyCached(token: string, audience: TokenAudience): TokenClaims | undefined {
    const cached = this.verified.get(cacheKeyOf(token));
    return cached && cached.token === token ? this.checkClaims(cached.claims, audience, token) : undefined;
  }

  /** The public keys as a JSON Web Key Set, for clients that verify tokens themselves. */
  jwks(): { keys: Array<Record<string, unknown>> } {
    return {
      keys: [...this.keys.values()].map((key) => ({ ...key.publicKey.export({ format: 'jwk' }), kid: key.kid, alg: ALG, use: 'sig' })),
    };
  }

  private checkClaims(claims: TokenClaims, audience: TokenAudience, token: string): TokenClaims {
    if (claims.exp * 1000 <= Date.now()) {
      this.verified.delete(cacheKeyOf(token));
      throw unauthenticated();
    }
    if (claims.aud !== audience) throw unauthenticated();
    return claims;
  }

  private async reload(): Promise<void> {
    this.lastReload = Date.now();
    const rows: Array<{ kid: string; private_key_pem: string; public_key_pem: string; created_at: Date; retired_at: Date | null }> = await this.knex(
      'signing_keys',
    ).select('kid', 'private_key_pem', 'public_key_pem', 'created_at', 'retired_at');
    const keys = new Map<string, SigningKey>();
    for (const row of rows) {
      keys.set(row.kid, {
        kid: row.kid,
        privateKey: row.retired_at ? undefined : createPrivateKey(row.private_key_pem),
        publicKey: createPublicKey(row.public_key_pem),
        createdAt: new Date(row.created_at).getTime(),
        retired: row.retired_at !== null,
      });
    }
    this.keys = keys;
    // Two processes starting on an empty database may each add a key; the newest active one signs.
    this.current = [...keys.values()].filter((key) => !key.retired).sort((a, b) => b.createdAt - a.createdAt)[0];
  }
}

function unauthenticated(): AppError {
  return new AppError('unauthenticated', 'Unauthorized');
}

function base64url(text: string): string {
  return Buffer.from(text).toString('base64url');
}

/** A cache key of a token: its last 43 characters, 256 bits of its signature (base64url). */
function cacheKeyOf(token: string): string {
  return token.slice(-43);
}
