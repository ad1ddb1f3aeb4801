import type { Knex } from 'knex';
import { AppError } from '../../errors.js';
import { contractCheck, contractParameterCheck } from '../../http/contract-rules.js';
import { ArticleRepository, type ArticleContent, type ArticleRow, type ListedArticleRow } from '../../store/repositories/publishing/article-repository.js';
import { TopicRepository } from '../../store/repositories/publishing/topic-repository.js';
import { countFor, pageOf, pageRequest, TIMESTAMP_KEY, type ListOrder, type Position } from './page.js';
import { InputCheck, isAuthor, requireContract, isEditor, isSuperuser, iso, requireRole, type ListPaging, type PublishingCaller } from './rules.js';
import type { Article, ArticleInput, ArticleList } from './types.js';

/** Filters of an article list; all optional (status defaults to published). */
export interface ArticleFilters {
  topic?: string | null | undefined;
  tag?: string | null | undefined;
  author?: string | null | undefined;
  q?: string | null | undefined;
  status?: 'published' | 'draft' | null | undefined;
}

/** The contract's bounds of an article (`ArticleInput`) and of the list filters (`listArticles`), for GraphQL as for REST. */
const articleRules = contractCheck('publishing', 'ArticleInput');
const filterRules = contractParameterCheck('publishing', 'listArticles', ['topic', 'tag', 'author', 'q']);
// Cursors of the two article orders: by publishedAt (published) and by createdAt (drafts).
const PUBLISHED_ORDER: ListOrder = { name: 'articles.published', key: TIMESTAMP_KEY };
const DRAFT_ORDER: ListOrder = { name: 'articles.draft', key: TIMESTAMP_KEY };

/**
 * Every article rule of docs/publishing.md, for REST and GraphQL alike: who writes, edits, deletes and
 * publishes; the draft → published transition (deleted is final and hidden); who sees drafts;
 * public lists of published articles with filters and full-text search.
 */
export class ArticleService {
  private readonly articles: ArticleRepository;
  private readonly topics: TopicRepository;

  constructor(private readonly knex: Knex) {
    this.articles = new ArticleRepository(knex);
    this.topics = new TopicRepository(knex);
  }

  /**
   * Published articles, newest first, for anyone. `status: draft` needs an author: writers get
   * their own drafts, editors and superusers everyone's. Pages by cursor or capped offset, with a
   * bounded total (page.ts).
   */
  async list(viewer: PublishingCaller | undefined, filters: ArticleFilters = {}, paging: ListPaging = {}): Promise<ArticleList> {
    const status = filters.status ?? 'published';
    const order = status === 'published' ? PUBLISHED_ORDER : DRAFT_ORDER;
    const request = pageRequest(order, paging.limit, paging.offset, paging.after);
    requireContract(filterRules, filters);
    let authorId = filters.author ?? undefined;
    if (status === 'draft') {
      const self = requireRole(viewer, isAuthor, 'Only writers may list drafts.');
      if (!isEditor(self)) {
        if (authorId !== undefined && authorId !== self.id)
          return { items: [], ...pageOf(order, request, { rows: [], counted: { n: 0, atLeast: false } }, positionOf).page };
        authorId = self.id;
      }
    }
    const search = filters.q?.trim() ? filters.q.trim() : undefined;
    const filter = { status, authorId, topicId: filters.topic ?? undefined, tag: filters.tag ?? undefined, search };
    const rows = await this.articles.list({ ...filter, take: request.limit + 1, offset: request.offset, after: request.after });
    const counted = await countFor(request, rows, (bound) => this.articles.count(filter, bound));
    const { rows: shown, page } = pageOf(order, request, { rows, counted }, positionOf);
    return { items: shown.map(toArticle), ...page };
  }

  /** One article; drafts only for those who may edit them, deleted ones for nobody (404). */
  async get(viewer: PublishingCaller | undefined, id: string): Promise<Article> {
    const row = await this.articles.findById(id);
    if (!row || !canSee(viewer, row)) throw notFound();
    return toArticle(row);
  }

  /** Writes a new draft whose author is the caller. */
  async create(caller: PublishingCaller | undefined, input: ArticleInput): Promise<Article> {
    const self = requireRole(caller, isAuthor, 'Only writers, editors and superusers may write articles.');
    const content = contentOf(input);
    return this.knex.transaction(async (trx) => {
      await this.requireTopic(content.topic_id, trx);
      return toArticle(await this.articles.insert(self.id, content, trx));
    });
  }

  /** Replaces title, text, tags, files and topic; the author, editors and superusers may. */
  async update(caller: PublishingCaller | undefined, id: string, input: ArticleInput): Promise<Article> {
    const self = requireRole(caller, isAuthor, 'Only writers, editors and superusers may change articles.');
    const content = contentOf(input);
    return this.knex.transaction(async (trx) => {
      const row = await this.articles.lockById(id, trx);
      if (!row || !canSee(self, row)) throw notFound();
      if (!canEdit(self, row)) throw new AppError('permission_denied', 'Only the author, editors and superusers may change this article.');
      await this.requireTopic(content.topic_id, trx);
      const updated = await this.articles.replaceContent(id, content, trx);
      if (!updated) throw notFound();
      return toArticle(updated);
    });
  }

  /** Marks an article deleted (kept, hidden); its author or a superuser may. */
  async remove(caller: PublishingCaller | undefined, id: string): Promise<void> {
    const self = requireRole(caller, isAuthor, 'Only writers, editors and superusers may delete articles.');
    await this.knex.transaction(async (trx) => {
      const row = await this.articles.lockById(id, trx);
      if (!row || !canSee(self, row)) throw notFound();
      if (!(row.author_id === self.id || isSuperuser(self))) throw new AppError('permission_denied', 'Only the author and superusers may delete this article.');
      await this.articles.setStatus(id, 'deleted', trx);
    });
  }

  /** draft → published (stamps publishedAt); published stays as it is; deleted cannot be published (409). */
  async publish(caller: PublishingCaller | undefined, id: string): Promise<Article> {
    requireRole(caller, isEditor, 'Only editors and superusers may publish articles.');
    return this.knex.transaction(async (trx) => {
      const row = await this.articles.lockById(id, trx);
      if (!row) throw notFound();
      if (row.status === 'deleted') throw new AppError('failed_precondition', 'A deleted article cannot be published.');
      if (row.status === 'published') return toArticle(row);
      const published = await this.articles.setStatus(id, 'published', trx);
      if (!published) throw notFound();
      return toArticle(published);
    });
  }

  private async requireTopic(topicId: string | null, trx: Knex): Promise<void> {
    if (topicId !== null && !(await this.topics.findById(topicId, trx))) {
      throw new AppError('invalid_argument', 'The request is invalid.', { violations: [{ field: 'topic', message: 'is not a known topic' }] });
    }
  }
}

/** Who may edit an article: its author, editors, superusers. */
function canEdit(caller: PublishingCaller, row: ArticleRow): boolean {
  return row.author_id === caller.id || isEditor(caller);
}

/** Published articles are public, drafts visible to those who may edit them, deleted ones to nobody. */
function canSee(viewer: PublishingCaller | undefined, row: ArticleRow): boolean {
  if (row.status === 'published') return true;
  if (row.status === 'deleted') return false;
  return viewer !== undefined && isAuthor(viewer) && canEdit(viewer, row);
}

/** Validates what an author writes; a PUT replaces everything, so what is left out is cleared. */
function contentOf(input: ArticleInput): ArticleContent {
  requireContract(articleRules, input);
  const tags = input.tags ?? [];
  const files = input.files ?? [];
  const check = new InputCheck();
  check.notBlank('title', input.title);
  check.notBlank('text', input.text);
  tags.forEach((tag, index) => check.notBlank(`tags.${index}`, tag));
  files.forEach((file, index) => check.notBlank(`files.${index}.fileType`, file.fileType));
  check.check('topic', input.topic == null || /^[0-9a-f]{24}$/.test(input.topic), 'must be a topic id');
  check.done();
  return {
    title: input.title,
    text: input.text,
    tags: [...new Set(tags)],
    files: files.map((file) => ({ url: file.url, fileType: file.fileType })),
    topic_id: input.topic ?? null,
  };
}

/** The wire shape of an article: `author` and `topic` are ids. */
function toArticle(row: ArticleRow): Article {
  return {
    _id: row.id,
    title: row.title,
    text: row.text,
    author: row.author_id,
    topic: row.topic_id,
    tags: row.tags,
    files: row.files,
    status: row.status,
    publishedAt: row.published_at === null ? null : iso(row.published_at),
    createdAt: iso(row.created_at),
    modifiedAt: iso(row.modified_at),
  };
}

function positionOf(row: ListedArticleRow): Position {
  return { key: row.sort_key, id: row.id };
}

function notFound(): AppError {
  return new AppError('not_found', 'No such article.');
}
