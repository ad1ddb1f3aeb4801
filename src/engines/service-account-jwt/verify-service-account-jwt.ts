import { createPublicKey, type KeyObject } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload, type ProtectedHeaderParameters } from 'jose';
import { canonicalJwsProblem } from './canonical-jws.js';

/** The one algorithm a service-account JWT may use; the header's `alg` must name exactly it. */
export const JWT_ALGORITHM = 'RS256';
/** How far ahead `exp` may lie (docs/iam.md: at most 1 h). */
const MAX_JWT_LIFETIME_SECONDS = 3600;
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

function decodeHeader(jwt: string): ProtectedHeaderParameters {
  try {
    return decodeProtectedHeader(jwt);
  } catch {
    throw new JwtRejectedError('header is not JSON (or not an object)');
  }
}

function decodeClaims(jwt: string): JWTPayload {
  try {
    return decodeJwt(jwt);
  } catch {
    throw new JwtRejectedError('payload is not JSON (or not an object)');
  }
}

/** jose's refusal, in the words docs/iam.md lists (the tests and logs match on them). */
function rejection(error: unknown): JwtRejectedError {
  if (error instanceof errors.JWSSignatureVerificationFailed) return new JwtRejectedError('bad signature');
  if (error instanceof errors.JWTExpired) return new JwtRejectedError('the JWT has expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf' && error.reason === 'check_failed') return new JwtRejectedError('the JWT is not valid yet (nbf)');
    if (error.claim === 'iss' || error.claim === 'sub') return new JwtRejectedError('claim iss differs from sub');
    return new JwtRejectedError(`claim ${error.claim} is missing or not a number`);
  }
  return new JwtRejectedError(`malformed JWT (${error instanceof Error ? error.message : String(error)})`);
}

/**
 * Validates a service account's self-signed JWT (docs/iam.md, "The service-account JWT") and returns the
 * account it proves. Every check must pass: compact JWS with header `alg` exactly RS256 (none, HS*,
 * ES*, PS* refused before any crypto) and a `kid`; claims `iss` = `sub` (the account id), `exp`
 * present, not past and at most 1 h ahead, `iat` present and not in the future (both with
 * CLOCK_SKEW_SECONDS tolerance), `nbf` respected if present; every segment canonical base64url; the
 * key exists, belongs to that account, is active and unexpired; the RSA signature verifies (jose);
 * the account exists and is active.
 */
export async function verifyServiceAccountJwt(jwt: string, lookup: JwtLookup, now: number = Date.now()): Promise<VerifiedServiceAccountJwt> {
  if (jwt.split('.').length !== 3) throw new JwtRejectedError('not a compact JWS (three dot-separated parts)');
  // Checks on the unverified header and claims first: a forged or malformed token costs no lookup.
  const header = decodeHeader(jwt);
  if (header.alg !== JWT_ALGORITHM) throw new JwtRejectedError(`alg ${JSON.stringify(header.alg)} is not ${JWT_ALGORITHM}`);
  if (header.crit !== undefined) throw new JwtRejectedError('critical header parameters are not supported');
  if (header.typ !== undefined && (typeof header.typ !== 'string' || header.typ.toUpperCase() !== 'JWT')) throw new JwtRejectedError('typ is not JWT');
  const keyId = header.kid;
  if (typeof keyId !== 'string' || keyId === '') throw new JwtRejectedError('header kid is missing');
  const { iss, sub } = decodeClaims(jwt);
  if (typeof sub !== 'string' || sub === '') throw new JwtRejectedError('claim sub is missing');
  if (iss !== sub) throw new JwtRejectedError('claim iss differs from sub');
  const problem = canonicalJwsProblem(jwt);
  if (problem !== undefined) throw new JwtRejectedError(problem);

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
  // jose checks the signature, then iss = sub = the key's account, exp/iat present and numbers, exp
  // not past and nbf not ahead (both with the skew); this API's own limits on exp and iat (docs/iam.md) follow.
  let claims: JWTPayload;
  try {
    ({ payload: claims } = await jwtVerify(jwt, publicKey, {
      algorithms: [JWT_ALGORITHM],
      issuer: key.serviceAccountId,
      subject: key.serviceAccountId,
      requiredClaims: ['exp', 'iat'],
      clockTolerance: CLOCK_SKEW_SECONDS,
      currentDate: new Date(now),
    }));
  } catch (error) {
    throw rejection(error);
  }
  const seconds = now / 1000;
  const exp = claims.exp ?? 0;
  if (exp > seconds + MAX_JWT_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS) throw new JwtRejectedError('exp is more than 1 h ahead');
  if ((claims.iat ?? 0) > seconds + CLOCK_SKEW_SECONDS) throw new JwtRejectedError('iat is in the future');

  const active = await lookup.accountActive(sub);
  if (active === undefined) throw new JwtRejectedError('unknown service account');
  if (!active) throw new JwtRejectedError('the service account is inactive');
  return { serviceAccountId: sub, keyId, expiresAt: exp };
}
