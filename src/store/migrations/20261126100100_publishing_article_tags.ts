import type { Knex } from 'knex';

/**
 * The tag table: one row per tag of every live (draft or published) article, with the article's
 * status and its list sort key (publishedAt when published, createdAt for a draft), indexed in the
 * lists' order. A GIN index on `tags` finds an article's tags but not in date order, so a common tag
 * meant sorting every match; this table walks `?tag=` newest first from the first row, and counts it
 * from the index alone. A trigger keeps it exact on every write, whoever writes (the server, a
 * migration, SQL by hand); a deleted article has no rows. The GIN index on `tags` it replaces goes.
 */
const BACKFILL_BATCH = 20_000;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('publishing_article_tags', (table) => {
    table.text('tag').notNullable();
    table.string('article_id', 24).notNullable().references('id').inTable('publishing_articles').onDelete('CASCADE');
    table.text('status').notNullable();
    table.timestamp('sort_at', { useTz: true }).notNullable();
    table.primary(['article_id', 'tag']);
  });
  await knex.raw('CREATE INDEX publishing_article_tags_list ON publishing_article_tags (tag, status, sort_at DESC, article_id DESC)');
  await knex.raw(`CREATE FUNCTION publishing_article_tags_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM publishing_article_tags WHERE article_id = NEW.id;
  IF NEW.status IN ('draft', 'published') THEN
    INSERT INTO publishing_article_tags (tag, article_id, status, sort_at)
    SELECT DISTINCT tag, NEW.id, NEW.status, CASE WHEN NEW.status = 'published' THEN NEW.published_at ELSE NEW.created_at END
    FROM jsonb_array_elements_text(NEW.tags) AS tag;
  END IF;
  RETURN NULL;
END
$$`);
  await knex.raw(
    'CREATE TRIGGER publishing_article_tags_sync AFTER INSERT OR UPDATE OF tags, status, published_at, created_at ON publishing_articles FOR EACH ROW EXECUTE FUNCTION publishing_article_tags_sync()',
  );
  // Existing articles, in batches by id so that no statement outlives the statement timeout.
  for (let after = ''; ; ) {
    const batch = await knex.raw<{ rows: Array<{ last: string | null }> }>(
      `WITH batch AS (SELECT id, tags, status, published_at, created_at FROM publishing_articles WHERE id > ? ORDER BY id LIMIT ${BACKFILL_BATCH}),
      tagged AS (
        INSERT INTO publishing_article_tags (tag, article_id, status, sort_at)
        SELECT DISTINCT tag, batch.id, batch.status, CASE WHEN batch.status = 'published' THEN batch.published_at ELSE batch.created_at END
        FROM batch, jsonb_array_elements_text(batch.tags) AS tag
        WHERE batch.status IN ('draft', 'published')
      )
      SELECT max(id) AS last FROM batch`,
      [after],
    );
    const last = batch.rows[0]?.last;
    if (!last) break;
    after = last;
  }
  // Lists no longer filter on `tags` itself.
  await knex.raw('DROP INDEX publishing_articles_tags');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX publishing_articles_tags ON publishing_articles USING gin (tags)');
  await knex.raw('DROP TRIGGER publishing_article_tags_sync ON publishing_articles');
  await knex.raw('DROP FUNCTION publishing_article_tags_sync()');
  await knex.schema.dropTable('publishing_article_tags');
}
