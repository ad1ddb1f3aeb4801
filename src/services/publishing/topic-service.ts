import type { Knex } from 'knex';
import { AppError } from '../../errors.js';
import { contractCheck } from '../../http/contract-rules.js';
import { TopicRepository, type TopicRow } from '../../store/repositories/publishing/topic-repository.js';
import { countFor, pageOf, pageRequest, type ListOrder } from './page.js';
import { InputCheck, isSuperuser, requireContract, iso, onUniqueViolation, requireRole, type ListPaging, type PublishingCaller } from './rules.js';

// Topics are ordered by lower(title), which is unique: the key alone is the position (any text).
const TOPIC_ORDER: ListOrder = { name: 'topics', key: /^[^]*$/ };
import type { Topic, TopicInput, TopicList } from './types.js';

/** The contract's bounds of a topic (`TopicInput`), for GraphQL as for REST. */
const topicRules = contractCheck('publishing', 'TopicInput');

/** Topics (docs/publishing.md): public to read, created by superusers, titles unique regardless of case. */
export class TopicService {
  private readonly topics: TopicRepository;

  constructor(knex: Knex) {
    this.topics = new TopicRepository(knex);
  }

  /** Topics by title, by cursor or capped offset, with a bounded total (page.ts). */
  async list(paging: ListPaging = {}): Promise<TopicList> {
    const request = pageRequest(TOPIC_ORDER, paging.limit, paging.offset, paging.after);
    const rows = await this.topics.list({ take: request.limit + 1, offset: request.offset, after: request.after });
    const counted = await countFor(request, rows, (bound) => this.topics.count(bound));
    const { rows: shown, page } = pageOf(TOPIC_ORDER, request, { rows, counted }, (row) => ({ key: row.sort_key, id: row.id }));
    return { items: shown.map(toTopic), ...page };
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
    requireContract(topicRules, input);
    const check = new InputCheck();
    check.notBlank('title', input.title);
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
