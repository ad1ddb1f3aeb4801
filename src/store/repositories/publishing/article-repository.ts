import type { Knex } from 'knex';
import { isObjectId, newObjectId } from './object-id.js';

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
export interface ArticleQuery {
  status: 'published' | 'draft';
  authorId?: string | undefined;
  topicId?: string | undefined;
  tag?: string | undefined;
  search?: string | undefined;
  limit: number;
  offset: number;
}

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
   * A page of articles, newest first (by publishedAt for published ones, createdAt for drafts),
   * and the total matching count, in one statement.
   */
  async list(query: ArticleQuery, trx: Knex = this.knex): Promise<{ rows: ArticleRow[]; total: number }> {
    const filtered = (builder: Knex.QueryBuilder) => {
      builder.where('status', query.status);
      // An id that cannot exist matches nothing (rather than `IS NULL`, or a database error).
      if (query.authorId !== undefined) builder.where('author_id', isObjectId(query.authorId) ? query.authorId : '');
      if (query.topicId !== undefined) builder.where('topic_id', isObjectId(query.topicId) ? query.topicId : '');
      if (query.tag !== undefined) builder.whereRaw('tags @> ?::jsonb', [JSON.stringify([query.tag])]);
      if (query.search !== undefined) builder.whereRaw("search @@ websearch_to_tsquery('english', ?)", [query.search]);
      return builder;
    };
    const order = query.status === 'published' ? 'published_at' : 'created_at';
    const rows: Array<ArticleRow & { total: number }> = await filtered(trx('publishing_articles').select([...COLUMNS, trx.raw('count(*) OVER () AS total')]))
      .orderBy([
        { column: order, order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(query.limit)
      .offset(query.offset);
    let total = rows[0]?.total;
    if (total === undefined) {
      const row = await filtered(trx('publishing_articles').count<{ n: number }[]>('* as n')).first();
      total = Number(row?.n ?? 0);
    }
    return { rows, total };
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

function serialise(content: ArticleContent): Record<string, unknown> {
  return { title: content.title, text: content.text, topic_id: content.topic_id, tags: JSON.stringify(content.tags), files: JSON.stringify(content.files) };
}
