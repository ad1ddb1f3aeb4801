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
   * breaking ties), starting after a position or an offset. Each filter has an index that walks this
   * order (migration 20261126100000), so a page reads about `take` rows whatever the table size.
   */
  async list(query: ArticlePageQuery, trx: Knex = this.knex): Promise<ListedArticleRow[]> {
    const order = sortColumn(query.status);
    const page = filtered(trx('publishing_articles').select([...COLUMNS, trx.raw(`${printTimestamp(order)} AS sort_key`)]), query);
    if (query.after) page.whereRaw(`(${order}, id) < (?::timestamptz, ?)`, [query.after.key, query.after.id]);
    return page
      .orderBy([
        { column: order, order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(query.take)
      .offset(query.offset);
  }

  /** How many articles match, counting no further than `bound` rows (so never O(matching rows)). */
  async count(filter: ArticleFilter, bound: number, trx: Knex = this.knex): Promise<number> {
    const matching = filtered(trx('publishing_articles').select(trx.raw('1')), filter).limit(bound);
    const row = await trx.from(matching.as('matching')).count<{ n: number }[]>('* as n').first();
    return Number(row?.n ?? 0);
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

function filtered(builder: Knex.QueryBuilder, filter: ArticleFilter): Knex.QueryBuilder {
  builder.where('status', filter.status);
  // An id that cannot exist matches nothing (rather than `IS NULL`, or a database error).
  if (filter.authorId !== undefined) builder.where('author_id', isObjectId(filter.authorId) ? filter.authorId : '');
  if (filter.topicId !== undefined) builder.where('topic_id', isObjectId(filter.topicId) ? filter.topicId : '');
  if (filter.tag !== undefined) builder.whereRaw('tags @> ?::jsonb', [JSON.stringify([filter.tag])]);
  if (filter.search !== undefined) builder.whereRaw("search @@ websearch_to_tsquery('english', ?)", [filter.search]);
  return builder;
}

function serialise(content: ArticleContent): Record<string, unknown> {
  return { title: content.title, text: content.text, topic_id: content.topic_id, tags: JSON.stringify(content.tags), files: JSON.stringify(content.files) };
}
