import type { Knex } from 'knex';

/** User accounts of the User Account API (seed 000). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (table) => {
    table.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    table.text('name').notNullable();
    table.text('password_hash').notNullable();
    table.boolean('is_admin').notNullable().defaultTo(false);
    table.boolean('onboarding_done').notNullable().defaultTo(false);
    table.text('profile_picture').notNullable().defaultTo('');
    table.jsonb('settings').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE UNIQUE INDEX users_name_unique ON users (name)');
  await knex.raw('CREATE INDEX users_admin ON users (is_admin) WHERE is_admin');
  // Failed sign-ins per key (`name:<name>` or `address:<ip>`), shared by every server process.
  await knex.schema.createTable('sign_in_failures', (table) => {
    table.text('key').primary();
    table.integer('failures').notNullable();
    table.timestamp('window_started_at', { useTz: true }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('sign_in_failures');
  await knex.schema.dropTable('users');
}
