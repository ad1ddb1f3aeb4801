import type { Knex } from 'knex';
import { isObjectId, newObjectId } from './object-id.js';
import { printTimestamp } from './sort-key.js';

export type ArticleStatus = 'draft' | 'published' | 'deleted';

export interface ArticleFile {
  url: string;
  fileType: string;
}

export interface ArticleRow {
  id: string;
  title: string;
  text: string;
  author_id: string;
  topic_id: string | null;
  tags: string[];
  files: ArticleFile[];
  status: ArticleStatus;
  published_at: Date | null;
  created_at: Date;
  modified_at: Date;
}

/** What an article's author writes; the rest (status, dates) is the service's business. */
export interface ArticleContent {
  title: string;
  text: string;
  tags: string[];
  files: ArticleFile[];
  topic_id: string | null;
}

/** Which articles a list shows; every filter is optional except the status. */
export interface ArticleFilter {
  status: 'published' | 'draft';
  authorId?: string | undefined;
  topicId?: string | undefined;
  tag?: string | undefined;
  search?: string | undefined;
}

/** A page of a list: `take` rows after `offset` skipped ones, or after the position `after`. */
export interface ArticlePageQuery extends ArticleFilter {
  take: number;
  offset: number;
  after?: { key: string; id: string } | undefined;
}

/** A listed article and its sort key (publishedAt or createdAt, printed to the microsecond), for cursors. */
export type ListedArticleRow = ArticleRow & { sort_key: string };

/** Rows of the list walked in order before a search falls back to sorting its GIN matches. */
const SEARCH_WINDOW = 2000;

const COLUMNS = ['id', 'title', 'text', 'author_id', 'topic_id', 'tags', 'files', 'status', 'published_at', 'created_at', 'modified_at'] as const;

/** SQL for articles, including full-text search; methods take an optional transaction. */
export class ArticleRepository {
  constructor(private readonly knex: Knex) {}

  /** Finds an article in any status (deleted ones too: the service decides who sees what). */
  async findById(id: string, trx: Knex = this.knex): Promise<ArticleRow | undefined> {
    if (!isObjectId(id)) return undefined;
    return trx('publishing_articles').select(COLUMNS).where({ id }).first();
  }

  /** Locks the article's row for the rest of the transaction (concurrent publish/delete/update). */
  async lockById(id: string, trx: Knex): Promise<ArticleRow | undefined> {
    if (!isObjectId(id)) return undefined;
    return trx('publishing_articles').select(COLUMNS).where({ id }).forUpdate().first();
  }

  /**
   * A page of articles, newest first (by publishedAt for published ones, createdAt for drafts, the id
   * breaking ties), starting after a position or an offset. Each filter is walked from an index in
   * this order (docs/architecture.md, "Publishing lists at scale"), so a page reads about `take` rows
   * whatever the table size: the list's partial index (led by topic or author when filtered by one),
   * or for a tag the tag table. Full-text search has no ordered index: see `search`.
   */
  async list(query: ArticlePageQuery, trx: Knex = this.knex): Promise<ListedArticleRow[]> {
    if (query.search !== undefined && query.tag === undefined) return this.search({ ...query, search: query.search }, trx);
    const { rows, source } = pageOf(trx, query, true);
    return rows.orderByRaw(orderOf(source)).limit(query.take).offset(query.offset);
  }

  /**
   * A page of a full-text search. GIN finds matches but not in date order, and the planner's guess of
   * how many match decides between walking the date index (fast for common words, every row for a
   * rare one) and sorting every match (the reverse). So both are bounded here: first the newest
   * SEARCH_WINDOW rows of the list are walked in order and filtered, which answers any word common
   * among recent articles; only when they hold too few matches, the matches are read from the GIN
   * index and sorted (few, since the word is rare among recent articles).
   */
  private async search(query: ArticlePageQuery & { search: string }, trx: Knex): Promise<ListedArticleRow[]> {
    const { rows, source } = pageOf(trx, query, false);
    const window = rows.select('a.search').orderByRaw(orderOf(source)).limit(SEARCH_WINDOW);
    const column = sortColumn(query.status);
    const recent: ListedArticleRow[] = await trx
      .select([...COLUMNS, 'sort_key'])
      .from(window.as('a'))
      .whereRaw("search @@ websearch_to_tsquery('english', ?)", [query.search])
      .orderBy([
        { column, order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(query.take)
      .offset(query.offset);
    if (recent.length === query.take) return recent;
    // `+ interval '0'` keeps the order but hides the date index from the planner: GIN it is.
    return pageOf(trx, query, true).rows.orderByRaw(`a.${column} + interval '0 seconds' DESC, a.id DESC`).limit(query.take).offset(query.offset);
  }

  /**
   * How many articles match, counting no further than `bound` rows (so never O(matching rows)):
   * `atLeast` when the count stopped early. A tag alone is counted in the tag table's index alone.
   * A full-text search is counted like its pages are found (see `search`): first among the newest
   * SEARCH_WINDOW rows of the list, which is the whole count when the list is no longer; when the
   * words match at least 1% of those rows, counting all their matches would cost O(matches) (GIN
   * finds every one of them before the first is counted), so the answer is "at least" the matches
   * seen; rarer words are counted from the GIN index.
   */
  async count(filter: ArticleFilter, bound: number, trx: Knex = this.knex): Promise<{ n: number; atLeast: boolean }> {
    if (filter.search !== undefined && filter.tag === undefined) {
      const source = sourceOf(trx, filter);
      const window = filtered(source.rows, filter, false).select('a.search').orderByRaw(orderOf(source)).limit(SEARCH_WINDOW);
      const seen = await trx
        .from(window.as('a'))
        .select(trx.raw("count(*) FILTER (WHERE search @@ websearch_to_tsquery('english', ?)) AS matches, count(*) AS walked", [filter.search]))
        .first<{ matches: number; walked: number }>();
      const matches = Number(seen?.matches ?? 0);
      if (Number(seen?.walked ?? 0) < SEARCH_WINDOW) return { n: matches, atLeast: false };
      if (matches >= SEARCH_WINDOW / 100) return { n: matches, atLeast: true };
    }
    const tagOnly = filter.tag !== undefined && filter.authorId === undefined && filter.topicId === undefined && filter.search === undefined;
    // The bound is written into the SQL and, without full-text, the count walks the list's own order:
    // then even a generic plan (PGlite's, which knows neither the values nor so the selectivity)
    // reads `bound` index entries, never a scan of the table until `bound` matches turn up.
    const source = sourceOf(trx, filter);
    const matching: Knex.QueryBuilder = tagOnly
      ? trx('publishing_article_tags').select(trx.raw('1')).where({ tag: filter.tag, status: filter.status })
      : filtered(source.rows, filter, true).select(trx.raw('1'));
    if (!tagOnly && filter.search === undefined) matching.orderByRaw(orderOf(source));
    matching.limit(bound, { skipBinding: true });
    const row = await trx.from(matching.as('matching')).count<{ n: number }[]>('* as n').first();
    return { n: Number(row?.n ?? 0), atLeast: false };
  }

  async insert(authorId: string, content: ArticleContent, trx: Knex = this.knex): Promise<ArticleRow> {
    const [created] = await trx('publishing_articles')
      .insert({ id: newObjectId(), author_id: authorId, status: 'draft', ...serialise(content) })
      .returning(COLUMNS);
    return created as ArticleRow;
  }

  async replaceContent(id: string, content: ArticleContent, trx: Knex = this.knex): Promise<ArticleRow | undefined> {
    const [updated] = await trx('publishing_articles')
      .where({ id })
      .update({ ...serialise(content), modified_at: trx.fn.now() })
      .returning(COLUMNS);
    return updated as ArticleRow | undefined;
  }

  /** Moves an article to `status`; publishing stamps `published_at` the first time. */
  async setStatus(id: string, status: ArticleStatus, trx: Knex = this.knex): Promise<ArticleRow | undefined> {
    const values: Record<string, unknown> = { status, modified_at: trx.fn.now() };
    if (status === 'published') values.published_at = trx.raw('coalesce(published_at, now())');
    const [updated] = await trx('publishing_articles').where({ id }).update(values).returning(COLUMNS);
    return updated as ArticleRow | undefined;
  }
}

/** The column a list of this status is ordered by (newest first). */
function sortColumn(status: ArticleFilter['status']): 'published_at' | 'created_at' {
  return status === 'published' ? 'published_at' : 'created_at';
}

/** Where a list's rows come from (`a` is always the article), and the columns of its order. */
interface ListSource {
  rows: Knex.QueryBuilder;
  sortAt: string;
  id: string;
}

/**
 * A tag filter reads the tag table (one row per tag of a live article, kept by a trigger, indexed by
 * tag, status and the list's order) joined to the articles; every other list reads the articles.
 */
function sourceOf(trx: Knex, filter: ArticleFilter): ListSource {
  if (filter.tag === undefined) return { rows: trx('publishing_articles as a'), sortAt: `a.${sortColumn(filter.status)}`, id: 'a.id' };
  const rows = trx('publishing_article_tags as t')
    .join('publishing_articles as a', 'a.id', 't.article_id')
    .where('t.tag', filter.tag)
    .where('t.status', filter.status);
  return { rows, sortAt: 't.sort_at', id: 't.article_id' };
}

/** The rows of a page with their sort key, filtered (full-text too, unless `withSearch` is false) and after the cursor. */
function pageOf(trx: Knex, query: ArticlePageQuery, withSearch: boolean): { rows: Knex.QueryBuilder; source: ListSource } {
  const source = sourceOf(trx, query);
  const rows = filtered(source.rows, query, withSearch).select([
    ...COLUMNS.map((column) => `a.${column}`),
    trx.raw(`${printTimestamp(source.sortAt)} AS sort_key`),
  ]);
  if (query.after) rows.whereRaw(`(${source.sortAt}, ${source.id}) < (?::timestamptz, ?)`, [query.after.key, query.after.id]);
  return { rows, source };
}

/** Newest first in the source's own order, which its index walks. */
function orderOf(source: ListSource): string {
  return `${source.sortAt} DESC, ${source.id} DESC`;
}

/**
 * The status as SQL text, not a bound value: every list index is partial (`WHERE status = 'published'`
 * or `'draft'`), and PostgreSQL uses a partial index only when the query's own text implies its
 * predicate. PGlite runs each statement as a generic prepared plan (store/pglite/init.ts), where `status = $1`
 * implies nothing, so a bound status made every list a sequential scan and a sort of the whole table
 * (docs/architecture.md, "Publishing lists on PGlite"). Only these two values can be written here.
 */
const STATUS_SQL: Record<ArticleFilter['status'], string> = { published: "a.status = 'published'", draft: "a.status = 'draft'" };

function filtered(rows: Knex.QueryBuilder, filter: ArticleFilter, withSearch: boolean): Knex.QueryBuilder {
  rows.whereRaw(STATUS_SQL[filter.status]);
  // An id that cannot exist matches nothing (rather than `IS NULL`, or a database error).
  if (filter.authorId !== undefined) rows.where('a.author_id', isObjectId(filter.authorId) ? filter.authorId : '');
  if (filter.topicId !== undefined) rows.where('a.topic_id', isObjectId(filter.topicId) ? filter.topicId : '');
  if (withSearch && filter.search !== undefined) rows.whereRaw("a.search @@ websearch_to_tsquery('english', ?)", [filter.search]);
  return rows;
}

function serialise(content: ArticleContent): Record<string, unknown> {
  return { title: content.title, text: content.text, topic_id: content.topic_id, tags: JSON.stringify(content.tags), files: JSON.stringify(content.files) };
}
