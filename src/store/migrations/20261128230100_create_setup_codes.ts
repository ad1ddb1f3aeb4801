import type { Knex } from 'knex';

/**
 * The one-time setup code of a fresh server (docs/users-api.md, "First run"): made at the first start
 * while no admin exists and stored, so every process and replica on the database accepts and logs the
 * same code; deleted when the first admin is created.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('setup_codes', (table) => {
    table.text('purpose').primary();
    table.text('code').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('setup_codes');
}
