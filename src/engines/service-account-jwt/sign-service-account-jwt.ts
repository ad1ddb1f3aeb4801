import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { JWT_ALGORITHM } from './verify-service-account-jwt.js';

/** The default lifetime of a JWT made for one exchange (5 minutes, as in docs/iam.md's curl example). */
const DEFAULT_JWT_TTL_SECONDS = 300;

/**
 * Builds the JWT a service account exchanges for an access token: RS256, header `kid` = the public
 * key id, claims `iss` = `sub` = the account id, `iat` now and `exp` a short time ahead. Used by the
 * command-line client and tests; any JOSE library produces the same.
 */
export function signServiceAccountJwt(
  input: { serviceAccountId: string; keyId: string; privateKey: string | KeyObject },
  options: { ttlSeconds?: number; now?: number } = {},
): string {
  const iat = Math.floor((options.now ?? Date.now()) / 1000);
  const header = Buffer.from(JSON.stringify({ alg: JWT_ALGORITHM, typ: 'JWT', kid: input.keyId })).toString('base64url');
  const payload = Buffer.from(
    JSON.stringify({ iss: input.serviceAccountId, sub: input.serviceAccountId, iat, exp: iat + (options.ttlSeconds ?? DEFAULT_JWT_TTL_SECONDS) }),
  ).toString('base64url');
  const key = typeof input.privateKey === 'string' ? createPrivateKey(input.privateKey) : input.privateKey;
  const signature = sign('RSA-SHA256', Buffer.from(`${header}.${payload}`), key).toString('base64url');
  return `${header}.${payload}.${signature}`;
}
