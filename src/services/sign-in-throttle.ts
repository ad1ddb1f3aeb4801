import type { Knex } from 'knex';
import type { Config } from '../config.js';
import { foldUserName } from '../auth/user-name.js';
import { AppError } from '../errors.js';
import { LimitCounterRepository } from '../store/repositories/limit-counter-repository.js';
import { clientKey } from './client-address.js';

export interface SignInThrottleOptions {
  /** Attempts that may fail per name from one address within the window; per address over all names, `ADDRESS_FACTOR` times as many. */
  maxFailures: number;
  windowSeconds: number;
  /** Attempts that may fail per name over all addresses within the window (default `NAME_FACTOR` × `maxFailures`). */
  nameMaxFailures?: number;
  /** The message of the 429, in the voice of the API that uses the throttle. */
  message?: string;
}

/** The SIGNIN_* settings, as every API that checks a password is given them. */
export type SignInSettings = Pick<Config, 'signInMaxFailures' | 'signInWindowSeconds' | 'signInNameMaxFailures'>;

/** The throttle's options from the SIGNIN_* settings. */
export function throttleOptionsOf(settings: SignInSettings): SignInThrottleOptions {
  return { maxFailures: settings.signInMaxFailures, windowSeconds: settings.signInWindowSeconds, nameMaxFailures: settings.signInNameMaxFailures };
}

// Several failures per address are normal (a household behind one NAT); a name from one address gets fewer tries.
const ADDRESS_FACTOR = 4;
// OWASP: the per-account ceiling over all addresses is much higher than the per name-and-address
// limit, so an attacker elsewhere does not lock the owner out as soon as they fail a few times.
const NAME_FACTOR = 20;

/** What one sign-in attempt counts against: its name and address together, its name, its client address. */
export interface SignInAttempt {
  pairKey: string;
  nameKey: string;
  addressKey: string;
}

/**
 * Sign-in throttling for every API that checks a password (`POST /api/auth`, `POST /v1/writers/login`).
 * Failures are counted in the database (so every process agrees), in fixed windows, against three
 * keys: the name from this address (`maxFailures`), the name from anywhere (the much higher
 * `nameMaxFailures`), and the address over all names (`ADDRESS_FACTOR` × `maxFailures`). An attempt
 * beyond any of them is refused with 429 and `Retry-After` before its password is checked. So an
 * attacker's guesses lock out the name only from the attacker's address until the name's own
 * ceiling is reached; the owner signs in from their own address meanwhile.
 *
 * An attempt is counted when it starts (one statement), not when it fails, so a burst of concurrent
 * guesses cannot all pass the check before the first failure is written; a success takes its count
 * back (and clears the name-and-address pair), and so does a refused attempt (it checked no
 * password). Names are counted trimmed and case-folded: `Admin ` and `admin` are one target.
 */
/** How one sign-in attempt ended, as the throttle saw it (for metrics). */
export type SignInOutcome = 'success' | 'failure' | 'throttled';

export class SignInThrottle {
  private readonly counters: LimitCounterRepository;
  private readonly observers: Array<(outcome: SignInOutcome) => void> = [];
  private readonly nameMaxFailures: number;

  constructor(
    knex: Knex,
    private readonly options: SignInThrottleOptions,
  ) {
    this.counters = new LimitCounterRepository(knex);
    this.nameMaxFailures = options.nameMaxFailures ?? options.maxFailures * NAME_FACTOR;
  }

  /**
   * Counts an attempt on `name` (in `scope`, e.g. `name` or `email`) from `address`, or throws
   * `resource_exhausted` (429) with the seconds until the window that refused it ends.
   */
  async begin(scope: string, name: string, address: string | undefined): Promise<SignInAttempt> {
    const nameKey = `sign-in:${scope}:${foldUserName(name)}`;
    const addressKey = `sign-in:address:${clientKey(address)}`;
    const attempt: SignInAttempt = { pairKey: `${nameKey}|${clientKey(address)}`, nameKey, addressKey };
    const limits: Record<string, number> = {
      [attempt.pairKey]: this.options.maxFailures,
      [attempt.nameKey]: this.nameMaxFailures,
      [attempt.addressKey]: this.options.maxFailures * ADDRESS_FACTOR,
    };
    const counted = await this.counters.count([attempt.pairKey, attempt.nameKey, attempt.addressKey], this.options.windowSeconds);
    const over = counted.filter((row) => row.count > (limits[row.key] ?? 0));
    if (over.length > 0) {
      this.emit('throttled');
      // A refused attempt checks no password, so it does not count (nor lengthen anything).
      await this.counters.forgive(counted.map((row) => row.key));
      const endsAt = Math.max(...over.map((row) => row.expiresAt.getTime()));
      throw new AppError('resource_exhausted', this.options.message ?? 'Too Many Requests', {
        retryAfterSeconds: Math.max(1, Math.ceil((endsAt - Date.now()) / 1000)),
      });
    }
    return attempt;
  }

  /** Tells `observer` how every attempt ends (the sign-in metrics). */
  observe(observer: (outcome: SignInOutcome) => void): void {
    this.observers.push(observer);
  }

  /** The attempt failed (wrong name or password); it was counted when it began. */
  failed(): void {
    this.emit('failure');
  }

  /** The attempt succeeded: the name starts afresh from this address, and the name and address get the attempt back. */
  async succeeded(attempt: SignInAttempt): Promise<void> {
    this.emit('success');
    await this.counters.forgiveAndClear([attempt.nameKey, attempt.addressKey], attempt.pairKey);
  }

  private emit(outcome: SignInOutcome): void {
    for (const observe of this.observers) observe(outcome);
  }
}
