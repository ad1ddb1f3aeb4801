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

  /** A page of topics by title, and how many there are in all. */
  async list(limit: number, offset: number, trx: Knex = this.knex): Promise<{ rows: TopicRow[]; total: number }> {
    const rows: Array<TopicRow & { total: number }> = await trx('publishing_topics')
      .select([...COLUMNS, trx.raw('count(*) OVER () AS total')])
      .orderByRaw('lower(title), id')
      .limit(limit)
      .offset(offset);
    let total = rows[0]?.total;
    if (total === undefined) {
      const row = await trx('publishing_topics').count<{ n: number }[]>('* as n').first();
      total = Number(row?.n ?? 0);
    }
    return { rows, total };
  }

  async insert(title: string, trx: Knex = this.knex): Promise<TopicRow> {
    const [created] = await trx('publishing_topics').insert({ id: newObjectId(), title }).returning(COLUMNS);
    return created as TopicRow;
  }
}
