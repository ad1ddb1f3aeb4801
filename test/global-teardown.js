import pg from 'pg';

/** Drops the PostgreSQL template database of this run. */
export default async function globalTeardown() {
  const url = process.env.DATABASE_URL;
  const name = process.env.TEST_TEMPLATE_DB;
  if (!url || !name) return;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
