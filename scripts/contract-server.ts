/**
 * A live server over a fresh, empty database for the contract-test scripts (gRPC client contract,
 * fuzzing): the same way scripts/contract-test.ts starts one per dredd contract.
 */
import { loadConfig } from '../src/config.js';
import { build, type App } from '../src/server/build.js';
import { freshStore } from './support/fresh-store.js';

export interface LiveServer {
  app: App;
  url: string;
  port: number;
  close(): Promise<void>;
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
