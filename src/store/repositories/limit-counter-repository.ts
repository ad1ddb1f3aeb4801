import type { Knex } from 'knex';

/** One key's count in its current window. */
export interface CountedKey {
  key: string;
  count: number;
  expiresAt: Date;
}

/** Every this many counts of one repository, one sweep deletes up to `SWEEP_ROWS` expired rows. */
const SWEEP_EVERY = 16;
/** More than `SWEEP_EVERY` counts can add (3 keys each), so the table shrinks to about the live windows. */
const SWEEP_ROWS = 64;

/**
 * Fixed-window counters in the database (`limit_counters`), so every server process counts against
 * the same limit. Counting is one statement; rows expire with their window and are swept a few at a
 * time as counting goes, so the table stays bounded without a background job.
 */
export class LimitCounterRepository {
  private counted = 0;

  constructor(private readonly knex: Knex) {}

  /**
   * Counts one event on each key (one statement), starting a fresh window of `windowSeconds` where
   * the old one has ended, and answers each key's count after this one (atomic per key, so
   * concurrent callers each see their own count). Rows are locked in key order here and in
   * `forgive`, so concurrent statements over overlapping keys cannot deadlock.
   */
  async count(keys: readonly string[], windowSeconds: number): Promise<CountedKey[]> {
    const list = keys.map(() => '?').join(', ');
    const result = await this.knex.raw(
      `INSERT INTO limit_counters AS counter (key, count, expires_at)
       SELECT key, 1, now() + make_interval(secs => ?) FROM unnest(ARRAY[${list}]::text[]) AS key ORDER BY key
       ON CONFLICT (key) DO UPDATE SET
         count = CASE WHEN counter.expires_at > now() THEN counter.count + 1 ELSE 1 END,
         expires_at = CASE WHEN counter.expires_at > now() THEN counter.expires_at ELSE excluded.expires_at END
       RETURNING key, count, expires_at`,
      [windowSeconds, ...keys],
    );
    this.counted += 1;
    if (this.counted % SWEEP_EVERY === 0) await this.sweep();
    return rowsOf<{ key: string; count: number; expires_at: Date | string }>(result).map((row) => ({
      key: row.key,
      count: Number(row.count),
      expiresAt: new Date(row.expires_at),
    }));
  }

  /**
   * Deletes up to `SWEEP_ROWS` expired rows. Its own statement, skipping rows another statement holds:
   * it never waits, so it cannot deadlock with a count; a failure only leaves rows for the next sweep.
   */
  async sweep(): Promise<void> {
    await this.knex
      .raw(
        `DELETE FROM limit_counters WHERE key IN (
           SELECT key FROM limit_counters WHERE expires_at <= now() ORDER BY expires_at LIMIT ${SWEEP_ROWS} FOR UPDATE SKIP LOCKED
         )`,
      )
      .catch(() => undefined);
  }

  /** Takes one count back from each key (an event that did not happen after all); rows locked in key order. */
  async forgive(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.knex.raw(
      `UPDATE limit_counters SET count = count - 1 WHERE key IN (
         SELECT key FROM limit_counters WHERE key IN (${keys.map(() => '?').join(', ')}) AND count > 0 ORDER BY key FOR UPDATE
       )`,
      [...keys],
    );
  }

  /** Takes one count back from each of `forgiven`, and ends the window of `cleared` (one row, so no lock is held while waiting). */
  async forgiveAndClear(forgiven: readonly string[], cleared: string): Promise<void> {
    await this.forgive(forgiven);
    await this.knex('limit_counters').where({ key: cleared }).delete();
  }
}

/** Rows of a knex.raw result: `{rows}` on both pg and knex-pglite. */
function rowsOf<Row>(result: unknown): Row[] {
  return ((result as { rows?: Row[] }).rows ?? []) as Row[];
}
