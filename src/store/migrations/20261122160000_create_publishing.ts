import type { Knex } from 'knex';

/**
 * Users, topics and articles of the Article Publishing API (seed 002 A). Ids are 24 hex characters
 * (the original was a MongoDB app, whose clients know ObjectId-shaped `_id`s).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('publishing_users', (table) => {
    table.string('id', 24).primary();
    table.text('email').notNullable();
    table.text('password_hash').notNullable();
    table.text('name').notNullable();
    table.text('profile_image_url');
    table.text('role').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('modified_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw("ALTER TABLE publishing_users ADD CONSTRAINT publishing_users_role CHECK (role IN ('superuser', 'editor', 'writer', 'reader'))");
  // Email is unique regardless of case; sign-in looks it up the same way.
  await knex.raw('CREATE UNIQUE INDEX publishing_users_email_unique ON publishing_users (lower(email))');

  await knex.schema.createTable('publishing_topics', (table) => {
    table.string('id', 24).primary();
    table.text('title').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('modified_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE UNIQUE INDEX publishing_topics_title_unique ON publishing_topics (lower(title))');

  await knex.schema.createTable('publishing_articles', (table) => {
    table.string('id', 24).primary();
    table.text('title').notNullable();
    table.text('text').notNullable();
    table.string('author_id', 24).notNullable().references('id').inTable('publishing_users');
    table.string('topic_id', 24).references('id').inTable('publishing_topics');
    table.jsonb('tags').notNullable().defaultTo('[]');
    table.jsonb('files').notNullable().defaultTo('[]');
    table.text('status').notNullable();
    table.timestamp('published_at', { useTz: true });
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('modified_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw("ALTER TABLE publishing_articles ADD CONSTRAINT publishing_articles_status CHECK (status IN ('draft', 'published', 'deleted'))");
  // Full-text search over title and text, kept by PostgreSQL itself (same on PGlite).
  await knex.raw(
    "ALTER TABLE publishing_articles ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || text)) STORED",
  );
  await knex.raw('CREATE INDEX publishing_articles_search ON publishing_articles USING gin (search)');
  await knex.raw('CREATE INDEX publishing_articles_tags ON publishing_articles USING gin (tags)');
  await knex.raw('CREATE INDEX publishing_articles_published ON publishing_articles (published_at DESC, id DESC) WHERE status = \'published\'');
  await knex.raw('CREATE INDEX publishing_articles_author ON publishing_articles (author_id, created_at DESC)');
  await knex.raw('CREATE INDEX publishing_articles_topic ON publishing_articles (topic_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('publishing_articles');
  await knex.schema.dropTable('publishing_topics');
  await knex.schema.dropTable('publishing_users');
}
