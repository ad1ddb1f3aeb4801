import type { Knex } from 'knex';

/** The installation's single tenant. */
export class TenantRepository {
  constructor(private readonly knex: Knex) {}

  /** Inserts the tenant unless one exists; true when this call made it (the first start). */
  async insertIfNone(id: string, trx: Knex = this.knex): Promise<boolean> {
    const inserted = await trx('iam_tenants').insert({ id, singleton: true }).onConflict('singleton').ignore().returning('id');
    return inserted.length > 0;
  }

  async get(trx: Knex = this.knex): Promise<string | undefined> {
    const row = await trx('iam_tenants').select('id').first();
    return row?.id as string | undefined;
  }
}
