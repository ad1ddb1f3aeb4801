import { setTimeout as delay } from 'node:timers/promises';

export interface PgliteAnalyzerOptions {
  /** How often to look for changed tables (default 60 s, autovacuum's own naptime). */
  intervalMs?: number;
  onError?(error: unknown): void;
  /** After a round that analyzed something: which tables, and how long the round took. */
  onAnalyzed?(tables: string[], ms: number): void;
}

/** Tables analyzed per round at most: each ANALYZE holds the embedded store's only thread for a while. */
const MAX_TABLES_PER_ROUND = 8;

/**
 * The tables whose planner statistics are stale, by autovacuum's own rule (rows changed since the last
 * ANALYZE above 50 + 10% of the rows then), or whose file grew by more than 10% (+ 50 pages) over the
 * size the planner last recorded: that second rule still holds when the change counters were lost
 * (after the bench loader closed a PGlite directory, 100,000 inserts showed as 0). Most changed first.
 */
const STALE_TABLES = `
  SELECT c.relname AS name
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
  WHERE n.nspname = current_schema() AND c.relkind = 'r'
    AND (coalesce(s.n_mod_since_analyze, 0) > 50 + 0.1 * greatest(c.reltuples, 0)
      OR pg_relation_size(c.oid) / current_setting('block_size')::int > 50 + 1.1 * greatest(c.relpages, 0))
  ORDER BY coalesce(s.n_mod_since_analyze, 0) DESC, pg_relation_size(c.oid) DESC
  LIMIT ${MAX_TABLES_PER_ROUND}`;

/**
 * PGlite's autovacuum: PostgreSQL in single-user mode has no autovacuum launcher, so nothing ever
 * ANALYZEs a table on the embedded store, and a table that grew (10^5 articles loaded or written) is
 * planned with the statistics of when it was small or with none, which picks the wrong index for the
 * publishing lists (docs/architecture.md, "Publishing lists on PGlite"). This runs at start and then
 * every `intervalMs`, and ANALYZEs the tables that changed enough, as autovacuum would on PostgreSQL.
 * ANALYZE reads a fixed-size sample (300 × default_statistics_target rows), so each costs about the
 * same whatever the table size; at most MAX_TABLES_PER_ROUND a round, one statement each.
 */
export class PgliteAnalyzer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopping = new AbortController();

  /** `run` answers a statement's rows: the store's `maintenance` (outside Knex: no query events). */
  constructor(
    private readonly run: (sql: string) => Promise<Array<Record<string, unknown>>>,
    private readonly options: PgliteAnalyzerOptions = {},
  ) {}

  start(): void {
    if (this.timer) return;
    this.stopping = new AbortController();
    const round = () => {
      if (this.stopping.signal.aborted) return;
      this.running ??= this.runOnce()
        .catch((error: unknown) => this.options.onError?.(error))
        .finally(() => (this.running = undefined));
    };
    // The first round right after start: a restarted server with a grown table is planned well at once.
    setImmediate(round);
    this.timer = setInterval(round, this.options.intervalMs ?? 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /**
   * One round: ANALYZEs the tables whose statistics are stale; answers their names. Between two
   * tables it waits as long as the last ANALYZE took, so requests get at least half of the store's
   * time while a round runs (an ANALYZE of a 10^5-row table holds PGlite for ~0.5–1 s).
   */
  async runOnce(): Promise<string[]> {
    const started = performance.now();
    const stale = (await this.run(STALE_TABLES)) as Array<{ name: string }>;
    const analyzed: string[] = [];
    for (const { name } of stale) {
      if (this.stopping.signal.aborted) break;
      const tableStarted = performance.now();
      await this.run(`ANALYZE "${name.replace(/"/g, '""')}"`);
      analyzed.push(name);
      if (analyzed.length < stale.length) await delay(performance.now() - tableStarted, undefined, { signal: this.stopping.signal }).catch(() => undefined);
    }
    if (analyzed.length) this.options.onAnalyzed?.(analyzed, performance.now() - started);
    return analyzed;
  }
}
