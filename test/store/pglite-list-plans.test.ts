import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import type { Knex } from 'knex';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { build, type App } from '../../src/server/build.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { PgliteAnalyzer } from '../../src/store/pglite/analyzer.js';
import { ArticleRepository, type ArticlePageQuery } from '../../src/store/repositories/publishing/article-repository.js';
import { pgliteTemplatePath } from '../support/template.js';

/**
 * The embedded store's plans for the publishing lists (docs/architecture.md, "Publishing lists on
 * PGlite"): always on PGlite, whatever DATABASE_URL says, since these are PGlite's own matters (its
 * prepared statements run generic plans, and it has no autovacuum).
 */
const ARTICLES = 20_000;
const TOPIC = `e${'2'.padStart(23, '0')}`; // topic 1 holds only drafts (i % 100 = 0)

let db: Database | undefined;
let app: App | undefined;
beforeAll(async () => {
  db = await openDatabase({ dataDir: 'memory://', loadDataDir: new Blob([readFileSync(pgliteTemplatePath())]) });
  const knex = store();
  await knex.raw(`INSERT INTO publishing_users (id, email, password_hash, name, role) VALUES ('${'a'.repeat(24)}', 'w@example.com', 'x', 'Writer', 'writer')`);
  await knex.raw(`INSERT INTO publishing_topics (id, title) SELECT 'e' || lpad(to_hex(i), 23, '0'), 'Topic ' || i FROM generate_series(1, 100) AS i`);
  // Loaded in bulk, as an import or a long-lived site would have them: 95% published, 100 topics.
  await knex.raw(
    `INSERT INTO publishing_articles (id, title, text, author_id, topic_id, tags, status, published_at, created_at)
     SELECT 'f' || lpad(to_hex(i), 23, '0'), 'Article ' || i, 'Text of article ' || i || ' w' || (i % 1000), '${'a'.repeat(24)}',
            'e' || lpad(to_hex(i % 100 + 1), 23, '0'), jsonb_build_array('t' || (i % 100)),
            CASE WHEN i % 20 = 0 THEN 'draft' ELSE 'published' END,
            CASE WHEN i % 20 = 0 THEN NULL ELSE now() - i * interval '1 second' END, now() - i * interval '1 second'
     FROM generate_series(1, ${ARTICLES}) AS i`,
  );
});
afterAll(async () => {
  await app?.close();
  if (!app) await db?.close();
});

function store(): Knex {
  if (!db) throw new Error('the test database did not open');
  return db.knex;
}

/**
 * The plans of every statement `run` sends, as the store runs them: each prepared under a name and
 * executed with its values, which under PGlite's `plan_cache_mode=force_generic_plan` is the
 * generic plan (the values are not known when it is planned).
 */
async function plansOf(run: (articles: ArticleRepository) => Promise<unknown>): Promise<string[]> {
  const statements: Array<{ sql: string; bindings: readonly unknown[] }> = [];
  const onQuery = (query: { sql: string; bindings?: readonly unknown[] }) => statements.push({ sql: query.sql, bindings: query.bindings ?? [] });
  store().on('query', onQuery);
  try {
    await run(new ArticleRepository(store()));
  } finally {
    store().off('query', onQuery);
  }
  const plans: string[] = [];
  for (const { sql, bindings } of statements) {
    let index = 0;
    await store().raw(`PREPARE plan_of_test AS ${sql.replace(/\?/g, () => `$${++index}`)}`);
    try {
      const values = bindings.map((value) => `'${String(value).replace(/'/g, "''")}'`).join(', ');
      const result = await store().raw(`EXPLAIN (COSTS OFF) EXECUTE plan_of_test${values ? `(${values})` : ''}`);
      plans.push((result.rows as Array<Record<string, string>>).map((row) => Object.values(row).join('')).join('\n'));
    } finally {
      await store().raw('DEALLOCATE plan_of_test');
    }
  }
  return plans;
}

const published: ArticlePageQuery = { status: 'published', take: 21, offset: 0 };

const LISTS = [
  ['the first page walks the published index', published, 'publishing_articles_published'],
  ['a page of one topic walks the topic index', { ...published, topicId: TOPIC }, 'publishing_articles_published_topic'],
  ['a page of drafts walks the drafts index', { ...published, status: 'draft' as const }, 'publishing_articles_drafts'],
] as const;

/** A page is read in its index's order (no sort of the matches); its count reads the same index (a bounded walk, or every match when the planner knows there are few). */
async function expectIndexed(query: ArticlePageQuery, index: string): Promise<void> {
  const [page, ...others] = await plansOf((articles) => articles.list(query));
  expect(others).toHaveLength(0);
  expect(page).toMatch(new RegExp(`Index Scan using ${index} on publishing_articles`));
  expect(page).not.toMatch(/Seq Scan|Sort/);
  const [count, ...more] = await plansOf((articles) => articles.count(query, 10_001));
  expect(more).toHaveLength(0);
  expect(count).toMatch(new RegExp(` ${index}( on publishing_articles|$)`, 'm'));
  expect(count).not.toMatch(/Seq Scan/);
}

describe('before any ANALYZE (a table loaded in bulk)', () => {
  test.each(LISTS)('%s, in the generic plan PGlite runs', async (_name, query, index) => {
    await expectIndexed(query, index);
  });
});

test('the maintenance round analyzes a table loaded in bulk, once', async () => {
  if (!db?.maintenance) throw new Error('a PGlite store has its maintenance path');
  const analyzer = new PgliteAnalyzer(db.maintenance);
  const before = await store().raw("SELECT reltuples FROM pg_class WHERE relname = 'publishing_articles'");
  expect(Number(before.rows[0].reltuples)).toBeLessThan(0); // never analyzed
  expect(await analyzer.runOnce()).toContain('publishing_articles');
  const after = await store().raw("SELECT reltuples FROM pg_class WHERE relname = 'publishing_articles'");
  expect(Number(after.rows[0].reltuples)).toBeGreaterThan(ARTICLES * 0.9);
  // Nothing changed since: the next round analyzes nothing.
  expect(await analyzer.runOnce()).not.toContain('publishing_articles');
});

describe('after the maintenance round', () => {
  test.each(LISTS)('%s, in the generic plan PGlite runs', async (_name, query, index) => {
    await expectIndexed(query, index);
  });
});

test('a server on PGlite analyzes a grown table itself at start, in statements Knex never sees', async () => {
  // Another bulk load, then the server starts on the store: its first maintenance round finds the growth.
  await store().raw(
    `INSERT INTO publishing_articles (id, title, text, author_id, status, published_at)
     SELECT 'f' || lpad(to_hex(i), 23, '0'), 'Article ' || i, 'More', '${'a'.repeat(24)}', 'published', now() - i * interval '1 second'
     FROM generate_series(${ARTICLES + 1}, ${ARTICLES * 2}) AS i`,
  );
  const seen: string[] = [];
  store().on('query', (query: { sql: string }) => seen.push(query.sql));
  let refreshed: (tables: string[]) => void = () => undefined;
  const analyzed = new Promise<string[]>((resolve) => (refreshed = resolve));
  const log = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split('\n').filter(Boolean)) {
        const line = JSON.parse(text) as { msg?: string; tables?: string[] };
        if (line.msg?.startsWith('PGlite planner statistics refreshed')) refreshed(line.tables ?? []);
      }
      done();
    },
  });
  app = await build(loadConfig({ LOG_LEVEL: 'info', MIGRATE: 'false' }), { database: db, logger: createLogger('info', log) });
  expect(await analyzed).toContain('publishing_articles');
  const after = await store().raw("SELECT reltuples FROM pg_class WHERE relname = 'publishing_articles'");
  expect(Number(after.rows[0].reltuples)).toBeGreaterThan(ARTICLES * 1.8);
  expect(seen.filter((sql) => /ANALYZE|pg_stat_user_tables/i.test(sql))).toEqual([]);
});
