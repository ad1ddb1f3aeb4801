import { createPublicKey, verify, type KeyObject } from 'node:crypto';

/** The one algorithm a service-account JWT may use; the header's `alg` must name exactly it. */
export const JWT_ALGORITHM = 'RS256';
/** How far ahead `exp` may lie (SPEC §5: at most 1 h). */
export const MAX_JWT_LIFETIME_SECONDS = 3600;
/**
 * Tolerated clock difference between the signer and this server, in seconds: `exp` may be this much
 * in the past or this much beyond the 1 h limit, and `iat`/`nbf` this much in the future.
 */
export const CLOCK_SKEW_SECONDS = 60;

/** A public key as the exchange needs it. */
export interface JwtPublicKey {
  serviceAccountId: string;
  /** SubjectPublicKeyInfo PEM (or an already parsed key). */
  publicKey: string | KeyObject;
  active: boolean;
  expiresAt: Date | null;
}

/** Where the engine looks up keys and accounts; the IAM services provide it. */
export interface JwtLookup {
  findKey(keyId: string): Promise<JwtPublicKey | undefined>;
  /** The account's `status.active`, or undefined when it does not exist. */
  accountActive(serviceAccountId: string): Promise<boolean | undefined>;
}

export interface VerifiedServiceAccountJwt {
  serviceAccountId: string;
  keyId: string;
  /** The JWT's `exp`, seconds since the epoch. */
  expiresAt: number;
}

/**
 * Why a JWT was refused. The reason is for logs and tests; clients get one generic answer
 * (`invalid_grant` / UNAUTHENTICATED), so a caller cannot probe which check failed.
 */
export class JwtRejectedError extends Error {
  override name = 'JwtRejectedError';
  constructor(readonly reason: string) {
    super(`the service account JWT is invalid: ${reason}`);
  }
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

function decodeJson(part: string, what: string): Record<string, unknown> {
  if (part === '' || !BASE64URL.test(part)) throw new JwtRejectedError(`${what} is not base64url`);
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    throw new JwtRejectedError(`${what} is not JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new JwtRejectedError(`${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

function numericDate(claims: Record<string, unknown>, name: string, required: boolean): number | undefined {
  const value = claims[name];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new JwtRejectedError(`claim ${name} is missing or not a number`);
  return value;
}

/**
 * Validates a service account's self-signed JWT (SPEC §5 "Service-account JWT") and returns the
 * account it proves. Every check must pass: compact JWS with header `alg` exactly RS256 (none, HS*,
 * ES*, PS* refused before any crypto) and a `kid`; claims `iss` = `sub` (the account id), `exp`
 * present, not past and at most 1 h ahead, `iat` present and not in the future (both with
 * CLOCK_SKEW_SECONDS tolerance), `nbf` respected if present; the key exists, belongs to that
 * account, is active and unexpired; the RSA signature verifies; the account exists and is active.
 */
export async function verifyServiceAccountJwt(jwt: string, lookup: JwtLookup, now: number = Date.now()): Promise<VerifiedServiceAccountJwt> {
  const parts = jwt.split('.');
  if (parts.length !== 3) throw new JwtRejectedError('not a compact JWS (three dot-separated parts)');
  const [headerPart = '', payloadPart = '', signaturePart = ''] = parts;
  const header = decodeJson(headerPart, 'header');
  if (header.alg !== JWT_ALGORITHM) throw new JwtRejectedError(`alg ${JSON.stringify(header.alg)} is not ${JWT_ALGORITHM}`);
  if (header.crit !== undefined) throw new JwtRejectedError('critical header parameters are not supported');
  if (header.typ !== undefined && (typeof header.typ !== 'string' || header.typ.toUpperCase() !== 'JWT')) throw new JwtRejectedError('typ is not JWT');
  const keyId = header.kid;
  if (typeof keyId !== 'string' || keyId === '') throw new JwtRejectedError('header kid is missing');
  const claims = decodeJson(payloadPart, 'payload');
  const { iss, sub } = claims;
  if (typeof sub !== 'string' || sub === '') throw new JwtRejectedError('claim sub is missing');
  if (iss !== sub) throw new JwtRejectedError('claim iss differs from sub');
  const seconds = now / 1000;
  const exp = numericDate(claims, 'exp', true) ?? 0;
  const iat = numericDate(claims, 'iat', true) ?? 0;
  const nbf = numericDate(claims, 'nbf', false);
  if (exp <= seconds - CLOCK_SKEW_SECONDS) throw new JwtRejectedError('the JWT has expired');
  if (exp > seconds + MAX_JWT_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS) throw new JwtRejectedError('exp is more than 1 h ahead');
  if (iat > seconds + CLOCK_SKEW_SECONDS) throw new JwtRejectedError('iat is in the future');
  if (nbf !== undefined && nbf > seconds + CLOCK_SKEW_SECONDS) throw new JwtRejectedError('the JWT is not valid yet (nbf)');
  if (signaturePart === '' || !BASE64URL.test(signaturePart)) throw new JwtRejectedError('the signature is not base64url');

  const key = await lookup.findKey(keyId);
  if (!key) throw new JwtRejectedError('unknown key id');
  if (key.serviceAccountId !== sub) throw new JwtRejectedError('the key belongs to another service account');
  if (!key.active) throw new JwtRejectedError('the key is inactive');
  if (key.expiresAt !== null && key.expiresAt.getTime() <= now) throw new JwtRejectedError('the key has expired');
  let publicKey: KeyObject;
  try {
    publicKey = typeof key.publicKey === 'string' ? createPublicKey(key.publicKey) : key.publicKey;
  } catch {
    throw new JwtRejectedError('the stored key cannot be read');
  }
  if (publicKey.asymmetricKeyType !== 'rsa') throw new JwtRejectedError('the stored key is not an RSA key');
  const signed = Buffer.from(`${headerPart}.${payloadPart}`);
  if (!verify('RSA-SHA256', signed, publicKey, Buffer.from(signaturePart, 'base64url'))) throw new JwtRejectedError('bad signature');

  const active = await lookup.accountActive(sub);
  if (active === undefined) throw new JwtRejectedError('unknown service account');
  if (!active) throw new JwtRejectedError('the service account is inactive');
  return { serviceAccountId: sub, keyId, expiresAt: exp };
}
