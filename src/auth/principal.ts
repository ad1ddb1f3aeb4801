import { AppError } from '../errors.js';
import { bearerToken } from './bearer-token.js';

/**
 * Who is calling the cloud API. Users sign in through the User Account API; service accounts
 * (added by the IAM area) exchange a JWT for a token. Every rule asks `authorize`, never the kind.
 */
export type Principal =
  | { kind: 'user'; /** `useraccount-<user id>` */ id: string; userId: string; isAdmin: boolean }
  | { kind: 'service-account'; /** `serviceaccount-…` */ id: string; projectId: string };

/** Turns a bearer token into a principal, or undefined when the token is not one it knows. */
export type PrincipalResolver = (token: string) => Promise<Principal | undefined>;

/** What a call does to resources: reads (Get, List) or changes them (every method returning an Operation). */
export type Access = 'read' | 'mutate';

/** Tries each resolver in order; no token, or a token none accepts → UNAUTHENTICATED. */
export async function resolvePrincipal(resolvers: readonly PrincipalResolver[], authorization: string | null | undefined): Promise<Principal> {
  const token = bearerToken(authorization);
  if (!token) throw new AppError('unauthenticated', 'a bearer token is required (Authorization: Bearer <token>)');
  for (const resolve of resolvers) {
    const principal = await resolve(token);
    if (principal) return principal;
  }
  throw new AppError('unauthenticated', 'the bearer token is invalid or expired');
}

/**
 * The one authorization rule of the cloud API (docs/iam.md, "Who may call"): admins may do everything,
 * other users may read; a service account may do everything inside its own project only.
 * `projectId` is the project the resource lives in (its parent).
 */
export function authorize(principal: Principal, access: Access, projectId: string): void {
  const allowed = principal.kind === 'user' ? principal.isAdmin || access === 'read' : principal.projectId === projectId && projectId !== '';
  if (!allowed) {
    throw new AppError('permission_denied', `${principal.id} may not ${access === 'read' ? 'read' : 'change'} resources of ${projectId || 'this parent'}`, {
      resourceId: projectId,
    });
  }
}

/**
 * What the user resolver needs of the accounts service (the users service has this shape); auth
 * depends on no service, so the service is passed in rather than imported.
 */
export interface UserAccounts<Caller extends { userId: string }> {
  authenticate(authorization: string | undefined): Caller | undefined | Promise<Caller | undefined>;
  get(caller: Caller, id: string): Promise<{ id: string; isAdmin: boolean }>;
}

/** Accepts user access tokens from `POST /api/auth` (audience `account`) of users that still exist. */
export function userPrincipalResolver<Caller extends { userId: string }>(users: UserAccounts<Caller>): PrincipalResolver {
  return async (token) => {
    const caller = await users.authenticate(`Bearer ${token}`);
    if (!caller) return undefined;
    try {
      const user = await users.get(caller, caller.userId);
      return { kind: 'user', id: `useraccount-${user.id}`, userId: user.id, isAdmin: user.isAdmin };
    } catch (error) {
      // A user deleted since the token was issued is no principal; a store that cannot answer is
      // not a refusal (UNAVAILABLE, not UNAUTHENTICATED).
      if (error instanceof AppError) return undefined;
      throw error;
    }
  };
}

/**
 * Remembers what a resolver answered for a token for `ttlMs`, so a busy client does not cost a
 * database read per call. The price is staleness: a deleted user or a changed admin flag takes
 * effect on the cloud API within `ttlMs` (the token's own expiry is still checked by the resolver
 * on every miss). Refusals are not cached.
 */
export function cachePrincipals(resolver: PrincipalResolver, ttlMs: number, maxEntries = 10_000): PrincipalResolver {
  if (ttlMs <= 0) return resolver;
  const cache = new Map<string, { principal: Principal; until: number }>();
  return async (token) => {
    const now = Date.now();
    const hit = cache.get(token);
    if (hit && hit.until > now) return hit.principal;
    const principal = await resolver(token);
    if (principal) {
      if (cache.size >= maxEntries) cache.clear();
      cache.set(token, { principal, until: now + ttlMs });
    }
    return principal;
  };
}
