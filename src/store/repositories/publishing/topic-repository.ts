import type { Knex } from 'knex';
import { isObjectId, newObjectId } from './object-id.js';

export interface TopicRow {
  id: string;
  title: string;
  created_at: Date;
  modified_at: Date;
}

const COLUMNS = ['id', 'title', 'created_at', 'modified_at'] as const;

/** SQL for topics; methods take an optional transaction. */
export class TopicRepository {
  constructor(private readonly knex: Knex) {}

  async findById(id: string, trx: Knex = this.knex): Promise<TopicRow | undefined> {
    if (!isObjectId(id)) return undefined;
    return trx('publishing_topics').select(COLUMNS).where({ id }).first();
  }

  /** One round trip for many ids (the GraphQL loaders batch through here). */
  async findByIds(ids: readonly string[], trx: Knex = this.knex): Promise<TopicRow[]> {
    const valid = [...new Set(ids.filter(isObjectId))];
    if (valid.length === 0) return [];
    return trx('publishing_topics').select(COLUMNS).whereIn('id', valid);
  }

  async findByTitle(title: string, trx: Knex = this.knex): Promise<TopicRow | undefined> {
    return trx('publishing_topics').select(COLUMNS).whereRaw('lower(title) = lower(?)', [title]).first();
  }

  /**
   * A page of topics by title regardless of case, after a position or an offset; `sort_key` is the
   * lower-cased title, unique (publishing_topics_title_unique), so the index alone orders the page.
   */
  async list(
    page: { take: number; offset: number; after?: { key: string } | undefined },
    trx: Knex = this.knex,
  ): Promise<Array<TopicRow & { sort_key: string }>> {
    const query = trx('publishing_topics').select([...COLUMNS, trx.raw('lower(title) AS sort_key')]);
    if (page.after) query.whereRaw('lower(title) > ?', [page.after.key]);
    return query.orderByRaw('lower(title)').limit(page.take).offset(page.offset);
  }

  /** How many topics there are, counting no further than `bound` rows. */
  async count(bound: number, trx: Knex = this.knex): Promise<number> {
    const row = await trx
      .from(trx('publishing_topics').select(trx.raw('1')).limit(bound).as('matching'))
      .count<{ n: number }[]>('* as n')
      .first();
    return Number(row?.n ?? 0);
  }

  async insert(title: string, trx: Knex = this.knex): Promise<TopicRow> {
    const [created] = await trx('publishing_topics').insert({ id: newObjectId(), title }).returning(COLUMNS);
    return created as TopicRow;
  }
}
