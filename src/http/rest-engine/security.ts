import type { Operation } from 'openapi-backend';
import { AppError } from '../../errors.js';
import type { NodeRequest } from '../reply.js';
import { ContractRefusal } from './contract-refusal.js';

/** One verifier per security scheme: the principal, or undefined without credentials for it. */
export type SecurityVerifiers = Record<string, (headers: NodeRequest['headers']) => Promise<unknown> | unknown>;

/** Checks an operation's security requirements; answers the accepted schemes' results or throws a 401. */
export type Authenticate = (operation: Operation, headers: NodeRequest['headers']) => Record<string, unknown> | Promise<Record<string, unknown>>;

/**
 * openapi-backend's security step (its `handleRequest` runs every registered handler and checks the
 * requirements), with each operation's scheme list computed once: the same rule, any requirement
 * whose schemes all accept.
 */
export function createAuthenticator(operations: Operation[], verifiers: SecurityVerifiers): Authenticate {
  // Each operation's requirements (their scheme names) and every scheme they name, computed once.
  const requirementsOf = new Map(
    operations.map((operation) => [operation.operationId, (operation.security ?? []).map((requirement) => Object.keys(requirement))]),
  );
  const schemesOf = new Map([...requirementsOf].map(([operationId, requirements]) => [operationId, [...new Set(requirements.flat())]]));

  /**
   * The contract's security: any one requirement whose schemes all accept; `{}` admits anyone. A
   * verifier may answer at once (a cached token) or with a promise; with no promise the result is
   * not one either (no microtask per request).
   */
  function authenticate(operation: Operation, headers: NodeRequest['headers']): Record<string, unknown> | Promise<Record<string, unknown>> {
    const requirements = requirementsOf.get(operation.operationId) ?? [];
    const results: Record<string, unknown> = {};
    if (requirements.length === 0) return results;
    const schemes = schemesOf.get(operation.operationId) ?? [];
    for (let index = 0; index < schemes.length; index++) {
      const scheme = schemes[index] as string;
      const verify = verifiers[scheme];
      let result: unknown;
      try {
        result = verify ? verify(headers) : undefined;
      } catch (error) {
        throw verifierFailure(error);
      }
      if (result instanceof Promise) return authenticateAsync(requirements, schemes, index, result, results, headers);
      results[scheme] = result;
    }
    return accepted(requirements, results);
  }

  /** The rest of `authenticate` once a verifier answered with a promise. */
  async function authenticateAsync(
    requirements: string[][],
    schemes: string[],
    from: number,
    pending: Promise<unknown>,
    results: Record<string, unknown>,
    headers: NodeRequest['headers'],
  ): Promise<Record<string, unknown>> {
    for (let index = from; index < schemes.length; index++) {
      const scheme = schemes[index] as string;
      const verify = verifiers[scheme];
      try {
        results[scheme] = index === from ? await pending : verify ? await verify(headers) : undefined;
      } catch (error) {
        throw verifierFailure(error);
      }
    }
    return accepted(requirements, results);
  }

  return authenticate;
}

/**
 * A verifier that throws saw credentials that are present but unusable: that refuses the request
 * (401) even where the operation also admits anonymous callers. Bad credentials are the engine's
 * 401, worded by the API; anything else (an unreachable store) is not a 401.
 */
function verifierFailure(error: unknown): unknown {
  return error instanceof AppError && error.code === 'unauthenticated' ? new ContractRefusal('unauthenticated', { cause: error }) : error;
}

/** The security results, when some requirement (its scheme names) has every one of its schemes accepting; else a 401. */
function accepted(requirements: string[][], results: Record<string, unknown>): Record<string, unknown> {
  // Loops, not some/every: no closures per request.
  for (const schemes of requirements) {
    let all = true;
    for (const scheme of schemes) all &&= Boolean(results[scheme]);
    if (all) return results;
  }
  throw new ContractRefusal('unauthenticated');
}
