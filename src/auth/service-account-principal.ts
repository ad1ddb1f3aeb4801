import type { TokenService } from './token-service.js';
import type { PrincipalResolver } from './principal.js';

/** What the resolver needs to know of an account: its project and whether it is active. */
export type ServiceAccountLookup = (id: string) => Promise<{ projectId: string; active: boolean } | undefined>;

/**
 * Accepts access tokens from the token exchange (audience `service-account`) of accounts that
 * still exist and are active; the principal's project is the account's project.
 */
export function serviceAccountPrincipalResolver(tokens: TokenService, accounts: ServiceAccountLookup): PrincipalResolver {
  return async (token) => {
    let subject: string;
    try {
      subject = (await tokens.verify(token, 'service-account')).sub;
    } catch {
      return undefined;
    }
    const account = await accounts(subject);
    if (!account?.active) return undefined;
    return { kind: 'service-account', id: subject, projectId: account.projectId };
  };
}
