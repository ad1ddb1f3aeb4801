import type { Knex } from 'knex';

/**
 * Indexes that walk each article list in its own order (docs/architecture.md, "Publishing lists at
 * scale"): a filtered page then reads about a page of index entries instead of sorting every match.
 * Published lists are ordered by (published_at DESC, id DESC), drafts by (created_at DESC, id DESC);
 * the partial indexes lead with the equality filter (topic, author) and end with that order. Tags and
 * full-text keep their GIN indexes. Writers are listed by (created_at, id).
 * The two indexes these replace covered every status and did not end in the list order.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    "CREATE INDEX publishing_articles_published_topic ON publishing_articles (topic_id, published_at DESC, id DESC) WHERE status = 'published'",
  );
  await knex.raw(
    "CREATE INDEX publishing_articles_published_author ON publishing_articles (author_id, published_at DESC, id DESC) WHERE status = 'published'",
  );
  await knex.raw("CREATE INDEX publishing_articles_drafts ON publishing_articles (created_at DESC, id DESC) WHERE status = 'draft'");
  await knex.raw("CREATE INDEX publishing_articles_drafts_author ON publishing_articles (author_id, created_at DESC, id DESC) WHERE status = 'draft'");
  await knex.raw('DROP INDEX publishing_articles_author');
  await knex.raw('DROP INDEX publishing_articles_topic');
  await knex.raw('CREATE INDEX publishing_users_created ON publishing_users (created_at, id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX publishing_users_created');
  await knex.raw('CREATE INDEX publishing_articles_topic ON publishing_articles (topic_id)');
  await knex.raw('CREATE INDEX publishing_articles_author ON publishing_articles (author_id, created_at DESC)');
  await knex.raw('DROP INDEX publishing_articles_drafts_author');
  await knex.raw('DROP INDEX publishing_articles_drafts');
  await knex.raw('DROP INDEX publishing_articles_published_author');
  await knex.raw('DROP INDEX publishing_articles_published_topic');
}
