/**
 * `node --import tsx bench/pglite-plans.ts <DATA_DIR>`: the plans PGlite runs for the publishing
 * lists, as the server runs them. Every statement the article repository sends for a list (page and
 * count) is captured from Knex, prepared under a name and explained with `EXPLAIN (ANALYZE) EXECUTE`,
 * so it gets the plan the store's own prepared statements get (a generic plan: PGlite starts with
 * `plan_cache_mode=force_generic_plan`, src/store/pglite/init.ts). Also prints what the planner knows of each
 * table (rows estimated at the last ANALYZE, and when that was).
 *
 * Made for a data directory loaded by `SCALE_SIZES= SCALE_PGLITE_KEEP=<dir> npm run bench:scale`
 * (the bench's PGlite part alone, the directory kept). No server may have the directory open.
 * `--maintain` first runs the server's own store maintenance once (PgliteAnalyzer), as it would at start.
 */
import type { Knex } from 'knex';
import { openDatabase } from '../src/store/database.js';
import { PgliteAnalyzer } from '../src/store/pglite/analyzer.js';
import { ArticleRepository, type ArticlePageQuery } from '../src/store/repositories/publishing/article-repository.js';

const dataDir = process.argv[2];
if (!dataDir) throw new Error('usage: bench/pglite-plans.ts <DATA_DIR> [--maintain]');
const database = await openDatabase({ dataDir });
const { knex } = database;
try {
  if (process.argv.includes('--maintain')) {
    const started = performance.now();
    const analyzed = await new PgliteAnalyzer(database.maintenance!).runOnce();
    console.log(`maintenance: analyzed ${analyzed.join(', ') || 'nothing'} in ${(performance.now() - started).toFixed(0)} ms`);
  }
  await printStatistics(knex);
  const articles = new ArticleRepository(knex);
  const published: ArticlePageQuery = { status: 'published', take: 21, offset: 0 };
  const [first] = await articles.list({ ...published, take: 20 }).then((rows) => rows.slice(-1));
  const cases: Array<{ name: string; query: ArticlePageQuery }> = [
    { name: 'first page', query: published },
    { name: 'next page (cursor)', query: { ...published, after: first ? { key: first.sort_key, id: first.id } : undefined } },
    { name: '?topic=', query: { ...published, topicId: `e${(8).toString(16).padStart(23, '0')}` } },
    { name: '?tag=', query: { ...published, tag: 't7' } },
    { name: '?q= (rare word)', query: { ...published, search: 'zyzzyva' } },
    { name: '?q= (common word)', query: { ...published, search: 'article' } },
  ];
  for (const { name, query } of cases) {
    for (const statement of await capture(knex, () => articles.list(query))) await explain(knex, `${name}: page`, statement);
    for (const statement of await capture(knex, () => articles.count(query, 10_001))) await explain(knex, `${name}: count`, statement);
  }
} finally {
  await database.close();
}

interface Statement {
  sql: string;
  bindings: readonly unknown[];
}

/** The statements `run` sends, in order. */
async function capture(knex: Knex, run: () => Promise<unknown>): Promise<Statement[]> {
  const statements: Statement[] = [];
  const listener = (data: { sql: string; bindings?: readonly unknown[] }) => statements.push({ sql: data.sql, bindings: data.bindings ?? [] });
  knex.on('query', listener);
  try {
    await run();
  } finally {
    knex.removeListener('query', listener);
  }
  return statements;
}

/** EXPLAIN ANALYZE of the statement's generic plan, as a named prepared statement of the store gets it. */
async function explain(knex: Knex, name: string, statement: Statement): Promise<void> {
  let index = 0;
  const sql = statement.sql.replace(/\?/g, () => `$${++index}`);
  const literal = (value: unknown) => (value === null ? 'NULL' : `'${String(value instanceof Date ? value.toISOString() : value).replace(/'/g, "''")}'`);
  await knex.raw(`PREPARE plans_statement AS ${sql}`);
  try {
    const args = statement.bindings.length ? `(${statement.bindings.map(literal).join(', ')})` : '';
    const result = await knex.raw(`EXPLAIN (ANALYZE, COSTS OFF) EXECUTE plans_statement${args}`);
    const lines = (result.rows as Array<{ 'QUERY PLAN': string }>).map((row) => `  ${row['QUERY PLAN']}`);
    console.log(`\n${name}\n${lines.join('\n')}`);
  } finally {
    await knex.raw('DEALLOCATE plans_statement');
  }
}

async function printStatistics(knex: Knex): Promise<void> {
  const result = await knex.raw(
    `SELECT c.relname, c.reltuples, s.n_mod_since_analyze, s.last_analyze, s.last_autoanalyze
     FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
     WHERE c.relname IN ('publishing_articles', 'publishing_article_tags') ORDER BY c.relname`,
  );
  console.table(result.rows);
}
