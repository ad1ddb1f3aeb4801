import { ConfigError, loadConfig } from './config.js';
import { openDatabase } from './store/database.js';

/** Entry point: the only place that listens and handles signals. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  // Open the store while the rest of the server loads: PGlite's start overlaps the module imports.
  const database = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const { build } = await import('./server/build.js');
  const app = await build(config, { database: await database });
  const port = await app.listen();
  app.logger.info({ port, database: app.db.kind }, 'listening');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.logger.info({ signal }, 'shutting down');
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
