import type { Knex } from 'knex';
import { AppError } from '../../errors.js';
import { LimitCounterRepository } from '../../store/repositories/limit-counter-repository.js';
import { clientKey } from '../client-address.js';

export interface RouteCreationLimitOptions {
  /** Routes one client may create per window. */
  maxPerWindow: number;
  windowSeconds: number;
}

/**
 * How many routes each client address may create per window (fixed windows, counted in the
 * database so the limit is the same whatever the number of server processes). Route creation is
 * anonymous — the route id is the capability — so the address is the only handle on a client that
 * floods it (counted by `clientKey`: IPv6 per /64).
 */
export class RouteCreationLimit {
  private readonly counters: LimitCounterRepository;

  constructor(
    knex: Knex,
    private readonly options: RouteCreationLimitOptions,
  ) {
    this.counters = new LimitCounterRepository(knex);
  }

  /**
   * Takes one creation from `address`'s allowance (one statement), or throws `resource_exhausted`
   * (429) with the seconds until the window ends. Answers a function that gives it back (the
   * creation failed). A refused creation needs no giving back: its window is over the limit anyway.
   */
  async take(address: string | undefined): Promise<() => Promise<void>> {
    const key = `route-creation:${clientKey(address)}`;
    const [counted] = await this.counters.count([key], this.options.windowSeconds);
    if (counted && counted.count > this.options.maxPerWindow) {
      throw new AppError(
        'resource_exhausted',
        `Too many routes created from this address; at most ${this.options.maxPerWindow} per ${this.options.windowSeconds} s.`,
        { retryAfterSeconds: Math.max(1, Math.ceil((counted.expiresAt.getTime() - Date.now()) / 1000)) },
      );
    }
    return () => this.counters.forgive([key]);
  }
}
