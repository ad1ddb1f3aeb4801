import { openDatabase, migrateLatest } from '../../src/store/database.js';
import { writePgliteTemplate } from '../../src/store/pglite-template.js';
import { pgliteTemplatePath } from './template.js';
import { adminQuery } from '../../scripts/support/fresh-store.js';

/**
 * Prepares one migrated template database for the whole run: a PGlite dump (cached on disk by the
 * migrations' hash, as initdb costs seconds) or, with DATABASE_URL, a PostgreSQL template database
 * that each test file clones.
 */
async function prepareTemplate(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (url) {
    const name = `cfs_template_${process.pid}`;
    await adminQuery(url, `DROP DATABASE IF EXISTS ${name}`);
    await adminQuery(url, `CREATE DATABASE ${name}`);
    const templateUrl = new URL(url);
    templateUrl.pathname = `/${name}`;
    const db = await openDatabase({ databaseUrl: templateUrl.toString(), poolMax: 1 });
    await migrateLatest(db.knex);
    await db.close();
    process.stdout.write(name);
    return;
  }
  // The same template `npm run build` ships (src/store/pglite-template.ts), cached in .tmp/ by its key.
  await writePgliteTemplate(pgliteTemplatePath());
}

await prepareTemplate();
