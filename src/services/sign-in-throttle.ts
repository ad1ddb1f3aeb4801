import type { Knex } from 'knex';
import { AppError } from '../errors.js';
import { SignInFailureRepository } from '../store/repositories/user-repository.js';
import { clientKey } from './client-address.js';

export interface SignInThrottleOptions {
  /** Attempts that may fail per name within the window; per address, `ADDRESS_FACTOR` times as many. */
  maxFailures: number;
  windowSeconds: number;
  /** The message of the 429, in the voice of the API that uses the throttle. */
  message?: string;
}

/** The defaults of SIGNIN_MAX_FAILURES and SIGNIN_WINDOW_SECONDS, for callers built without a config (the CLI). */
export const DEFAULT_SIGN_IN_THROTTLE: SignInThrottleOptions = { maxFailures: 5, windowSeconds: 300 };

// Several failures per address are normal (a household behind one NAT); a name gets fewer tries.
const ADDRESS_FACTOR = 4;

/** What one sign-in attempt counts against: its account name and its client address. */
export interface SignInAttempt {
  nameKey: string;
  addressKey: string;
}

/**
 * Sign-in throttling for every API that checks a password (`POST /api/auth`, `POST /v1/writers/login`):
 * failures are counted per name and per client address in the database (so every process agrees),
 * in fixed windows, and an attempt beyond the limit is refused with 429 and `Retry-After` before its
 * password is checked.
 *
 * An attempt is counted when it starts, not when it fails, so a burst of concurrent guesses cannot
 * all pass the check before the first failure is written; a success takes its count back (and clears
 * the name's), and so does a refused attempt (it checked no password). Names are counted trimmed and case-folded: `Admin ` and `admin` are one target.
 */
export class SignInThrottle {
  private readonly failures: SignInFailureRepository;

  constructor(
    knex: Knex,
    private readonly options: SignInThrottleOptions,
  ) {
    this.failures = new SignInFailureRepository(knex);
  }

  /**
   * Counts an attempt on `name` (in `scope`, e.g. `name` or `email`) from `address`, or throws
   * `resource_exhausted` (429) with the seconds until its window ends.
   */
  async begin(scope: string, name: string, address: string | undefined): Promise<SignInAttempt> {
    const attempt = { nameKey: `${scope}:${normaliseName(name)}`, addressKey: `address:${clientKey(address)}` };
    const windowSeconds = this.options.windowSeconds;
    for (const row of await this.failures.record([attempt.nameKey, attempt.addressKey], windowSeconds)) {
      const limit = row.key === attempt.nameKey ? this.options.maxFailures : this.options.maxFailures * ADDRESS_FACTOR;
      if (row.failures > limit) {
        // A refused attempt checks no password, so it does not count (nor lengthen anything).
        await this.failures.forgive(attempt.nameKey);
        await this.failures.forgive(attempt.addressKey);
        const elapsed = (Date.now() - new Date(row.window_started_at).getTime()) / 1000;
        throw new AppError('resource_exhausted', this.options.message ?? 'Too Many Requests', {
          retryAfterSeconds: Math.max(1, Math.ceil(windowSeconds - elapsed)),
        });
      }
    }
    return attempt;
  }

  /** The attempt succeeded: the name starts afresh, and the address gets its attempt back. */
  async succeeded(attempt: SignInAttempt): Promise<void> {
    await this.failures.clear(attempt.nameKey);
    await this.failures.forgive(attempt.addressKey);
  }
}

/** The form of a name the throttle counts: trimmed, Unicode-normalised (NFKC) and case-folded. */
export function normaliseName(name: string): string {
  return String(name).normalize('NFKC').trim().toLowerCase();
}
