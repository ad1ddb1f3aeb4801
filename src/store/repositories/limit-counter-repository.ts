import type { Knex } from 'knex';

/** One key's count in its current window. */
export interface CountedKey {
  key: string;
  count: number;
  expiresAt: Date;
}

/** Expired rows of other keys deleted by each count: more than a count can add, so the table shrinks to the live windows. */
const SWEEP_ROWS = 16;

/**
 * Fixed-window counters in the database (`limit_counters`), so every server process counts against
 * the same limit. Each call is one statement.
 */
export class LimitCounterRepository {
  constructor(private readonly knex: Knex) {}

  /**
   * Counts one event on each key, starting a fresh window of `windowSeconds` where the old one has
   * ended, and answers each key's count after this one (atomic per key, so concurrent callers each
   * see their own count). The same statement deletes a few expired rows of other keys.
   */
  async count(keys: readonly string[], windowSeconds: number): Promise<CountedKey[]> {
    const list = keys.map(() => '?').join(', ');
    const result = await this.knex.raw(
      `WITH swept AS (
         DELETE FROM limit_counters WHERE key IN (
           SELECT key FROM limit_counters WHERE expires_at <= now() AND key NOT IN (${list}) ORDER BY expires_at LIMIT ${SWEEP_ROWS}
         )
       )
       INSERT INTO limit_counters AS counter (key, count, expires_at)
       SELECT key, 1, now() + make_interval(secs => ?) FROM unnest(ARRAY[${list}]::text[]) AS key
       ON CONFLICT (key) DO UPDATE SET
         count = CASE WHEN counter.expires_at > now() THEN counter.count + 1 ELSE 1 END,
         expires_at = CASE WHEN counter.expires_at > now() THEN counter.expires_at ELSE excluded.expires_at END
       RETURNING key, count, expires_at`,
      [...keys, windowSeconds, ...keys],
    );
    return rowsOf<{ key: string; count: number; expires_at: Date | string }>(result).map((row) => ({
      key: row.key,
      count: Number(row.count),
      expiresAt: new Date(row.expires_at),
    }));
  }

  /** Takes one count back from each key (an event that did not happen after all). */
  async forgive(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.knex('limit_counters').whereIn('key', keys).where('count', '>', 0).decrement('count', 1);
  }

  /** Takes one count back from each of `forgiven` and ends the windows of `cleared` (disjoint keys), in one statement. */
  async forgiveAndClear(forgiven: readonly string[], cleared: readonly string[]): Promise<void> {
    if (cleared.length === 0) return this.forgive(forgiven);
    if (forgiven.length === 0) {
      await this.knex('limit_counters').whereIn('key', cleared).delete();
      return;
    }
    await this.knex.raw(
      `WITH cleared AS (DELETE FROM limit_counters WHERE key IN (${cleared.map(() => '?').join(', ')}))
       UPDATE limit_counters SET count = count - 1 WHERE key IN (${forgiven.map(() => '?').join(', ')}) AND count > 0`,
      [...cleared, ...forgiven],
    );
  }
}

/** Rows of a knex.raw result: `{rows}` on both pg and knex-pglite. */
function rowsOf<Row>(result: unknown): Row[] {
  return ((result as { rows?: Row[] }).rows ?? []) as Row[];
}
