import type { Knex } from 'knex';

/** The `setup_codes` table: one row per purpose while that one-time code is open. */
export class SetupCodeRepository {
  constructor(private readonly knex: Knex) {}

  /** The stored code for `purpose`, storing `candidate` first when none is (the first process to ask wins). */
  async findOrCreate(purpose: string, candidate: string): Promise<string> {
    await this.knex('setup_codes').insert({ purpose, code: candidate }).onConflict('purpose').ignore();
    const row = await this.knex('setup_codes').where({ purpose }).first<{ code: string } | undefined>('code');
    return row?.code ?? candidate;
  }

  async find(purpose: string, trx: Knex = this.knex): Promise<string | undefined> {
    const row = await trx('setup_codes').where({ purpose }).first<{ code: string } | undefined>('code');
    return row?.code;
  }

  async delete(purpose: string, trx: Knex = this.knex): Promise<void> {
    await trx('setup_codes').where({ purpose }).delete();
  }
}
