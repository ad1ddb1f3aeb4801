import type { Knex } from 'knex';
import { AppError } from '../../errors.js';
import { TopicRepository, type TopicRow } from '../../store/repositories/publishing/topic-repository.js';
import { InputCheck, isSuperuser, iso, onUniqueViolation, pageOf, requireRole, type PublishingCaller } from './rules.js';
import type { Topic, TopicInput, TopicList } from './types.js';

/** Topics (docs/publishing.md): public to read, created by superusers, titles unique regardless of case. */
export class TopicService {
  private readonly topics: TopicRepository;

  constructor(knex: Knex) {
    this.topics = new TopicRepository(knex);
  }

  async list(limit?: number | null, offset?: number | null): Promise<TopicList> {
    const page = pageOf(limit, offset);
    const { rows, total } = await this.topics.list(page.limit, page.offset);
    return { items: rows.map(toTopic), total, ...page };
  }

  /** Many topics in one query, in the order asked, null where unknown (batch loading). */
  async getMany(ids: readonly string[]): Promise<Array<Topic | null>> {
    const byId = new Map((await this.topics.findByIds(ids)).map((row) => [row.id, row]));
    return ids.map((id) => {
      const row = byId.get(id);
      return row ? toTopic(row) : null;
    });
  }

  async create(caller: PublishingCaller | undefined, input: TopicInput): Promise<Topic> {
    requireRole(caller, isSuperuser, 'Only superusers may create topics.');
    const check = new InputCheck();
    check.text('title', input.title, 1, 100);
    check.done();
    const title = input.title.trim();
    if (await this.topics.findByTitle(title)) throw titleTaken();
    return toTopic(await this.topics.insert(title).catch(onUniqueViolation(titleTaken)));
  }
}

function toTopic(row: TopicRow): Topic {
  return { _id: row.id, title: row.title, createdAt: iso(row.created_at), modifiedAt: iso(row.modified_at) };
}

function titleTaken(): AppError {
  return new AppError('already_exists', 'A topic with this title already exists.', { violations: [{ field: 'title', message: 'is already taken' }] });
}
