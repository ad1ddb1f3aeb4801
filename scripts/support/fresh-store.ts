/**
 * Scratch databases for the scripts, benches and tests that start a server of their own: one place
 * that creates and drops them, so every copy names, cleans up and connects the same way.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * Runs one statement on the PostgreSQL server of `url` over a connection of its own: CREATE and
 * DROP DATABASE cannot run inside a transaction, so not through a Knex pool.
 */
export async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export interface ScratchDatabase {
  /** The new database on the same server as the admin URL. */
  url: string;
  drop(): Promise<void>;
}

/**
 * A new database named `cfs_<prefix>_<random>` on the server of `adminUrl` (empty, or a copy of
 * `template`); `drop` removes it even while connections to it are open.
 */
export async function scratchDatabase(adminUrl: string, prefix: string, template?: string): Promise<ScratchDatabase> {
  const name = `cfs_${prefix}_${randomBytes(6).toString('hex')}`;
  await adminQuery(adminUrl, template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

export interface FreshStore {
  /** The environment a server needs to use the store (DATABASE_URL, or DATA_DIR for PGlite). */
  env: Record<string, string>;
  remove(): Promise<void>;
}

/** An empty store: a scratch database on DATABASE_URL's server when it is set, else a new PGlite directory. */
export async function freshStore(prefix: string): Promise<FreshStore> {
  const adminUrl = process.env.DATABASE_URL;
  if (adminUrl) {
    const database = await scratchDatabase(adminUrl, prefix);
    return { env: { DATABASE_URL: database.url }, remove: database.drop };
  }
  const dir = mkdtempSync(join(tmpdir(), `cfs-${prefix}-`));
  return { env: { DATABASE_URL: '', DATA_DIR: dir }, remove: async () => rmSync(dir, { recursive: true, force: true }) };
}
