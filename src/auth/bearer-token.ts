import { AppError } from '../errors.js';

/** Extracts the token of an `Authorization: Bearer <token>` header; anything else is no token. */
export function bearerToken(authorization: string | null | undefined): string | undefined {
  if (!authorization) return undefined;
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
}

/** Request headers of either HTTP version. */
export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * The access token a request presents, read the one way every endpoint of an audience reads it
 * (docs/publishing.md, "Tokens"): `Authorization: Bearer <token>`, or the token alone in
 * `apiKeyHeader` (the publishing API's `x-access-token`). Every credential header that is present
 * counts: an `Authorization` of another scheme (Basic…) or an empty or repeated token header is a bad
 * credential, never silently skipped for the other header, and when both headers are sent they must
 * carry the same token. Answers undefined when no credential header is present (anonymous); throws
 * `unauthenticated` for a bad one.
 */
export function presentedToken(headers: RequestHeaders, apiKeyHeader?: string): string | undefined {
  const authorization = headers.authorization;
  const apiKey = apiKeyHeader === undefined ? undefined : headers[apiKeyHeader];
  if (authorization === undefined && apiKey === undefined) return undefined;
  const fromAuthorization = authorization === undefined ? undefined : (typeof authorization === 'string' && bearerToken(authorization)) || refuse();
  const fromApiKey = apiKey === undefined ? undefined : (typeof apiKey === 'string' && apiKey.trim()) || refuse();
  if (fromAuthorization !== undefined && fromApiKey !== undefined && fromAuthorization !== fromApiKey) refuse();
  return fromAuthorization ?? fromApiKey;
}

function refuse(): never {
  throw new AppError('unauthenticated', 'A valid access token is required.');
}
