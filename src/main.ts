import cluster from 'node:cluster';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { checkPortFree, checkTlsFiles } from './startup-checks.js';
import { describeStartupError, StartupTimeoutError, type StartupStep } from './startup-errors.js';
import { initdbLine, servingLine, servingUrl, tellPerson } from './startup-lines.js';
import { databaseOptionsOf, openDatabase, type NewDatabaseSource } from './store/database.js';
import { shippedPgliteTemplate } from './store/pglite-template.js';
import { prepareStore, runPrimary, workersProblem } from './server/cluster.js';
import type { SchemaStandby } from './server/schema-standby.js';

/**
 * Entry point: the only place that listens and handles signals. A start that fails prints one line
 * naming the setting at fault (PORT, HOST, TLS_CERT, TLS_KEY, DATABASE_URL, DATA_DIR) and exits 1; a
 * bad variable exits 2. TLS files and the port are checked before the store opens, so those mistakes
 * cost well under a second and leave no DATA_DIR behind.
 */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const workers = workersProblem(config);
  if (workers) {
    process.stderr.write(`cannot start: ${workers}\n`);
    process.exit(1);
  }
  const multiProcess = config.workers > 1;
  // With WORKERS > 1 every line says which process wrote it (which worker served a request).
  const logger = multiProcess ? createLogger(config.logLevel).child({ pid: process.pid }) : createLogger(config.logLevel);
  if (multiProcess && cluster.isPrimary) return startPrimary(config, logger);
  let stop: ((reason: string, exitCode: number) => void) | undefined;
  watchProcessErrors(logger, (reason) => (stop ? stop(reason, 1) : process.exit(1)));

  let step: StartupStep = 'listen';
  const fail = (error: unknown): never => {
    process.stderr.write(`cannot start: ${describeStartupError(error, step, config)}\n`);
    logger.debug({ err: error, step }, 'start failed');
    // process.exit, not a graceful close: a half-open store or a hung connection must not keep us here.
    // The DATA_DIR lock is removed by its exit hook.
    process.exit(1);
  };
  // A black-holed database or a stuck file system would otherwise hang the start with no word.
  const armDeadline = (ms = config.startupTimeoutMs) => setTimeout(() => fail(new StartupTimeoutError(ms)), ms);
  let deadline = armDeadline();
  /**
   * A new embedded database made by initdb (no matching template in the build) is the one slow start:
   * seconds, and over a minute with the machine's cores busy (issue 29). It says so, and its deadline
   * is INITDB_DEADLINE_FACTOR × STARTUP_TIMEOUT_MS from then on, so a busy machine does not kill it
   * while a hang still ends.
   */
  const onNewDatabase = (how: NewDatabaseSource) => {
    if (how === 'template') {
      logger.info({ dataDir: config.dataDir }, "new embedded database from the build's migrated template");
      return;
    }
    tellPerson(initdbLine(config));
    logger.info({ dataDir: config.dataDir }, 'creating the embedded database with initdb (no matching template in this build)');
    clearTimeout(deadline);
    deadline = armDeadline(config.startupTimeoutMs * INITDB_DEADLINE_FACTOR);
  };
  try {
    checkTlsFiles(config);
    // Bound and let go before the store opens: a port in use fails now, not after the store's start.
    // (A worker's port is the primary's, which checked it.)
    if (cluster.isPrimary) await checkPortFree(config.port, config.host);
    step = 'database';
    // Load the server's modules while the store opens: PGlite's start overlaps the imports.
    const loading = import('./server/build.js');
    loading.catch(() => undefined); // awaited below; a rejection before then is not "unhandled"
    const database = await openDatabase({ ...databaseOptionsOf(config), newDatabaseTemplate: shippedPgliteTemplate, onNewDatabase });
    // pg connects lazily: one query now, so an unreachable or missing database is named as such.
    await database.knex.raw('select 1');
    // MIGRATE=false: a schema behind the code waits for `cfs-server migrate` on a standby server (not
    // ready); that wait is not a slow start, so the deadline pauses meanwhile and SIGTERM just exits.
    let standby: SchemaStandby | undefined;
    if (!config.migrate) {
      clearTimeout(deadline);
      const exit = () => process.exit(0);
      process.once('SIGTERM', exit).once('SIGINT', exit);
      const { waitForSchema } = await import('./server/schema-standby.js');
      standby = await waitForSchema(config, database, logger);
      process.off('SIGTERM', exit).off('SIGINT', exit);
      deadline = armDeadline();
    }
    step = 'build';
    const { build } = await loading;
    const app = await build(config, { database, logger });
    step = 'listen';
    await standby?.close();
    const port = await app.listen(standby?.port ?? config.port);
    clearTimeout(deadline);
    tellPerson(servingLine(config, port, app.db.kind));
    app.logger.info({ port, url: servingUrl(config, port), database: app.db.kind }, 'listening');
    let stopping = false;
    stop = (reason, exitCode) => {
      if (stopping) {
        // A second signal: skip what is left of SHUTDOWN_DELAY_MS (the drain itself still runs).
        if (reason !== 'uncaughtException') void app.close();
        return;
      }
      stopping = true;
      app.logger.info({ reason }, 'shutting down');
      app.close().then(
        () => process.exit(exitCode),
        (error: unknown) => {
          app.logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.on('SIGTERM', () => stop?.('SIGTERM', 0));
    process.on('SIGINT', () => stop?.('SIGINT', 0));
  } catch (error) {
    fail(error);
  }
}

/** How many times STARTUP_TIMEOUT_MS a start that runs initdb gets (it measured 61–74 s at load 10–17). */
const INITDB_DEADLINE_FACTOR = 4;

/** WORKERS > 1: prepare the store once within STARTUP_TIMEOUT_MS, then fork and supervise the workers. */
async function startPrimary(config: Config, logger: Logger): Promise<void> {
  let step: StartupStep = 'listen';
  const fail = (error: unknown): never => {
    process.stderr.write(`cannot start: ${describeStartupError(error, step, config)}\n`);
    logger.debug({ err: error, step }, 'start failed');
    process.exit(1);
  };
  const deadline = setTimeout(() => fail(new StartupTimeoutError(config.startupTimeoutMs)), config.startupTimeoutMs);
  try {
    checkTlsFiles(config);
    await checkPortFree(config.port, config.host);
    step = 'database';
    await prepareStore(config);
  } catch (error) {
    fail(error);
  }
  clearTimeout(deadline);
  const primary = runPrimary({
    workers: config.workers,
    shutdownDelayMs: config.shutdownDelayMs,
    shutdownGraceMs: config.shutdownGraceMs,
    logger,
    onStopped: (code) => process.exit(code),
  });
  process.on('SIGTERM', () => primary.stop('SIGTERM'));
  process.on('SIGINT', () => primary.stop('SIGINT'));
}

/**
 * A stray rejection (a callback nobody awaited) is logged and the server keeps serving: one bad
 * request must not take every other client down with it. An uncaught exception leaves the process
 * in an unknown state, so it is logged and the server shuts down gracefully with exit code 1 (a
 * supervisor restarts it). Either way the log says what happened, where Node would die silently
 * or with a bare stack on stderr.
 */
function watchProcessErrors(logger: Logger, shutDown: (reason: string) => void): void {
  process.on('unhandledRejection', (reason: unknown) => {
    logger.error({ err: reason }, 'unhandled promise rejection');
  });
  process.on('uncaughtException', (error: Error) => {
    logger.fatal({ err: error }, 'uncaught exception; shutting down');
    shutDown('uncaughtException');
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
