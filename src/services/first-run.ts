import { createHash, randomInt, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';
import { AppError } from '../errors.js';
import { SetupCodeRepository } from '../store/repositories/setup-code-repository.js';
import { isLocalClient, type ResolvedClient } from './client-address.js';

/** The header in which a client on another machine presents the setup code the server logged. */
const SETUP_CODE_HEADER = 'x-setup-code';

const FIRST_ADMIN = 'first-admin';

/** Crockford's base32 alphabet: no I, L, O or U, so a code read off a log is typed back without doubt. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** What a request offers towards creating the first admin: where it comes from, and any setup code. */
export interface FirstRunClaim {
  /** The client is on this machine (loopback) and no proxy stands between (see `isLocalClient`). */
  local: boolean;
  setupCode: string | undefined;
}

/** The claim a request makes, from its client address and headers. */
export function firstRunClaimOf(client: ResolvedClient, headers: Record<string, string | string[] | undefined>): FirstRunClaim {
  const code = headers[SETUP_CODE_HEADER];
  return { local: isLocalClient(client, headers), setupCode: typeof code === 'string' ? code : undefined };
}

/** A new code: 16 characters of base32 (80 bits) in four groups, e.g. `7QKM-2D9X-HV4T-0RNE`. */
function newSetupCode(): string {
  const chars = Array.from({ length: 16 }, () => ALPHABET[randomInt(ALPHABET.length)]);
  return [0, 4, 8, 12].map((start) => chars.slice(start, start + 4).join('')).join('-');
}

/** Case, dashes and spaces do not matter; `O`, `I` and `L` are read as the digits they look like. */
function canonical(code: string): string {
  return code.toUpperCase().replace(/[\s-]/g, '').replace(/O/g, '0').replace(/[IL]/g, '1');
}

function digest(code: string): Buffer {
  return createHash('sha256').update(canonical(code)).digest();
}

/**
 * The first-run door of a fresh server (docs/users-api.md, "First run"). While no admin exists, the
 * original front end's onboarding (the first sign-in creates the admin) and anonymous user creation
 * stay open, but only to a client on this machine or to one that presents the one-time setup code the
 * server logs at start, as Jenkins and Grafana do: a stranger who reaches a fresh server first cannot
 * claim it. The code is kept in the database, so every replica logs and accepts the same one, and is
 * deleted with the first admin's creation.
 */
export class FirstRunSetup {
  private readonly codes: SetupCodeRepository;

  constructor(knex: Knex) {
    this.codes = new SetupCodeRepository(knex);
  }

  /** The setup code, made now if this is the first process to need one (call it only while no admin exists). */
  code(): Promise<string> {
    return this.codes.findOrCreate(FIRST_ADMIN, newSetupCode());
  }

  /** Throws 403 unless `claim` may create the first admin; call it inside the transaction that creates it. */
  async check(claim: FirstRunClaim, trx: Knex): Promise<void> {
    if (claim.local) return;
    const stored = claim.setupCode === undefined ? undefined : await this.codes.find(FIRST_ADMIN, trx);
    // Compared as digests: equal length, constant time, whatever the caller sent.
    if (stored !== undefined && claim.setupCode !== undefined && timingSafeEqual(digest(claim.setupCode), digest(stored))) return;
    throw new AppError(
      'permission_denied',
      `No admin exists yet. Create the first one from the server's own machine, or send the setup code from the server's log in the X-Setup-Code header.`,
    );
  }

  /** Closes the door: the first admin exists. */
  close(trx: Knex): Promise<void> {
    return this.codes.delete(FIRST_ADMIN, trx);
  }
}
