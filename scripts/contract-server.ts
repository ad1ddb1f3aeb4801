/**
 * A live server over a fresh, empty database for the contract-test scripts (gRPC client contract,
 * fuzzing): the same way scripts/contract-test.ts starts one per dredd contract.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { build, type App } from '../src/server/build.js';

export interface LiveServer {
  app: App;
  url: string;
  port: number;
  close(): Promise<void>;
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** An empty database (a new database on DATABASE_URL's server, or a new PGlite directory), and how to remove it. */
export async function freshStore(prefix: string): Promise<{ env: Record<string, string>; remove(): Promise<void> }> {
  const url = process.env.DATABASE_URL;
  if (url) {
    const name = `cfs_${prefix}_${randomBytes(6).toString('hex')}`;
    await adminQuery(url, `CREATE DATABASE ${name}`);
    const dbUrl = new URL(url);
    dbUrl.pathname = `/${name}`;
    return { env: { DATABASE_URL: dbUrl.toString() }, remove: () => adminQuery(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
  }
  const dir = mkdtempSync(join(tmpdir(), `cfs-${prefix}-`));
  return { env: { DATABASE_URL: '', DATA_DIR: dir }, remove: async () => rmSync(dir, { recursive: true, force: true }) };
}

/** Builds the real server on 127.0.0.1:0 over a fresh migrated database; `close` removes the database too. */
export async function startLiveServer(prefix: string, env: Record<string, string> = {}): Promise<LiveServer> {
  const store = await freshStore(prefix);
  try {
    const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.CONTRACT_LOG_LEVEL ?? 'warn', MIGRATE: 'true', ...store.env, ...env });
    const app = await build(config);
    const port = await app.listen(0, '127.0.0.1');
    return {
      app,
      url: `http://127.0.0.1:${port}`,
      port,
      async close() {
        try {
          await app.close();
        } finally {
          await store.remove();
        }
      },
    };
  } catch (error) {
    await store.remove();
    throw error;
  }
}
