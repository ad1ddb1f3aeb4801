import type { Knex } from 'knex';

/**
 * IAM (SPEC §5): the installation's tenant, projects, service accounts and their public keys.
 * As for instances, each resource is stored whole as protobuf binary in `data`; the columns beside
 * it are copies for lookups, uniqueness, ordering and the token exchange's key check.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('iam_tenants', (table) => {
    table.text('id').primary();
    // At most one row: the installation's tenant, made at first start by whichever process wins.
    table.boolean('singleton').notNullable().defaultTo(true).unique();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('ALTER TABLE iam_tenants ADD CONSTRAINT iam_tenants_singleton CHECK (singleton)');
  for (const name of ['iam_projects', 'iam_service_accounts']) {
    await knex.schema.createTable(name, (table) => {
      table.text('id').primary();
      table.specificType('seq', 'bigserial').notNullable();
      table.text('parent_id').notNullable();
      table.text('name').notNullable();
      table.bigInteger('resource_version').notNullable();
      table.binary('data').notNullable();
      table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    });
    await knex.raw(`CREATE UNIQUE INDEX ${name}_name ON ${name} (parent_id, name)`);
    await knex.raw(`CREATE INDEX ${name}_parent ON ${name} (parent_id, seq)`);
  }
  await knex.schema.createTable('iam_public_keys', (table) => {
    table.text('id').primary();
    table.specificType('seq', 'bigserial').notNullable();
    // The project of the service account.
    table.text('parent_id').notNullable();
    table.text('service_account_id').notNullable().references('id').inTable('iam_service_accounts').onDelete('CASCADE');
    table.text('fingerprint').notNullable();
    table.boolean('active').notNullable();
    table.timestamp('expires_at', { useTz: true });
    // The SubjectPublicKeyInfo PEM the token exchange verifies signatures with.
    table.text('public_key_pem').notNullable();
    table.bigInteger('resource_version').notNullable();
    table.binary('data').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE UNIQUE INDEX iam_public_keys_fingerprint ON iam_public_keys (service_account_id, fingerprint)');
  await knex.raw('CREATE INDEX iam_public_keys_parent ON iam_public_keys (parent_id, seq)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('iam_public_keys');
  await knex.schema.dropTable('iam_service_accounts');
  await knex.schema.dropTable('iam_projects');
  await knex.schema.dropTable('iam_tenants');
}
