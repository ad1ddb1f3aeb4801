import cluster, { type Worker } from 'node:cluster';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { databaseOptionsOf, migrate, openDatabase } from '../store/database.js';
import { readSchemaState } from '../store/schema-state.js';

/**
 * `WORKERS=N`: N server processes behind one port, on one machine (docs/operations.md, Scaling out).
 * The primary serves nothing: it prepares the store once, forks the workers — each one builds the
 * whole server and listens on the same port, which node:cluster shares (the primary accepts and
 * hands connections out round-robin) — restarts a worker that dies, and on SIGTERM/SIGINT asks every
 * worker to shut down gracefully and exits when they have.
 */

/** The one-line refusal of WORKERS>1 without PostgreSQL; `null` when the setting is fine. */
export function workersProblem(config: Pick<Config, 'workers' | 'databaseUrl'>): string | null {
  if (config.workers <= 1 || config.databaseUrl) return null;
  return `WORKERS=${config.workers} needs DATABASE_URL: the embedded PGlite store (DATA_DIR) belongs to one process; set DATABASE_URL=postgres://… or WORKERS=1`;
}

/**
 * What must happen once, not once per worker: migrations (knex's migration lock would make N-1
 * workers wait and then find nothing to do), and the first signing key (two workers creating one
 * each at once would retire each other's). Bootstrap accounts (ADMIN_USERNAME, SUPERUSER_EMAIL) and
 * the default project are already safe to race: each worker tries, unique constraints keep one.
 */
export async function prepareStore(config: Config): Promise<void> {
  // Loaded here, not at the top: main.ts imports this module, and a single-process start should not pay for it.
  const { TokenService } = await import('../auth/token-service.js');
  const database = await openDatabase({ ...databaseOptionsOf(config), poolMax: 1 });
  try {
    await database.knex.raw('select 1');
    if (config.migrate) await migrate(database);
    // MIGRATE=false on a schema that is behind: no key can be stored yet; each worker waits for the
    // migrations, not ready (src/server/schema-standby.ts), and the first to build creates it.
    else if ((await readSchemaState(database.knex)).missing.length > 0) return;
    await TokenService.create(database.knex);
  } finally {
    await database.close();
  }
}

export interface PrimaryOptions {
  workers: number;
  /** A worker gets the delay and the grace (plus a margin for closing the store) to finish after SIGTERM. */
  shutdownDelayMs: number;
  shutdownGraceMs: number;
  logger: Logger;
  /** Called once every worker has exited after a shutdown; the exit code to use. */
  onStopped(exitCode: number): void;
}

/** A worker that ran at least this long before dying is restarted at once: it was not crash-looping. */
const STABLE_MS = 10_000;
const MAX_BACKOFF_MS = 10_000;

/** Forks the workers and supervises them. Workers start with MIGRATE=false: the primary migrated. */
export function runPrimary(options: PrimaryOptions): { stop(reason: string): void } {
  const { logger } = options;
  const started = new Map<Worker, number>();
  let quickDeaths = 0;
  let stopping = false;
  let failed = false;

  let everListened = false;

  const fork = (): void => {
    const worker = cluster.fork({ MIGRATE: 'false' });
    started.set(worker, Date.now());
    worker.once('listening', () => (everListened = true));
    worker.once('exit', (code, signal) => onExit(worker, code, signal));
  };

  const onExit = (worker: Worker, code: number | null, signal: string | null): void => {
    const lived = Date.now() - (started.get(worker) ?? 0);
    started.delete(worker);
    if (stopping) {
      if (code !== 0) failed = true;
      if (started.size === 0) finish();
      return;
    }
    if (!everListened) {
      // No worker ever came up: a setting is wrong (the worker printed which), and restarting would
      // only repeat it. The deployment fails as a single process would.
      failed = true;
      stop('a worker failed to start');
      return;
    }
    // Exponential backoff while workers die young (a bad deploy, a database refusing logins), so a
    // crash loop does not spin the CPU; a worker that had been serving for a while is replaced at once.
    quickDeaths = lived < STABLE_MS ? quickDeaths + 1 : 0;
    const delayMs = quickDeaths === 0 ? 0 : Math.min(MAX_BACKOFF_MS, 100 * 2 ** (quickDeaths - 1));
    logger.error({ workerPid: worker.process.pid, code, signal, restartInMs: delayMs }, 'worker exited; restarting it');
    setTimeout(() => {
      if (!stopping) fork();
    }, delayMs);
  };

  let forceTimer: NodeJS.Timeout | undefined;
  const finish = (): void => {
    clearTimeout(forceTimer);
    options.onStopped(failed ? 1 : 0);
  };

  for (let index = 0; index < options.workers; index++) fork();
  void answerMetricsRequests(logger);
  logger.info({ workers: options.workers }, 'primary started its workers');

  function stop(reason: string): void {
    if (stopping) {
      for (const worker of started.keys()) worker.process.kill('SIGTERM');
      return;
    }
    stopping = true;
    logger.info({ reason, workers: started.size }, 'stopping the workers');
    if (started.size === 0) return finish();
    // The signal itself, not worker.kill(): that disconnects the IPC channel first, and the worker's
    // own SIGTERM handler is the graceful shutdown (not ready, SHUTDOWN_DELAY_MS, drain, store closed).
    // A second signal is forwarded too: it ends the workers' delay.
    for (const worker of started.keys()) worker.process.kill('SIGTERM');
    // A worker stuck past its grace (plus time to close the store) is killed, and the exit is 1.
    forceTimer = setTimeout(
      () => {
        logger.error({ workers: started.size }, 'workers still running after the grace; killing them');
        failed = true;
        for (const worker of started.keys()) worker.process.kill('SIGKILL');
      },
      options.shutdownDelayMs + options.shutdownGraceMs + 5000,
    );
  }
  return { stop };
}

/** A worker's request for the whole cluster's metrics, and the primary's answer. */
const METRICS_REQUEST = 'cfs:cluster-metrics';
const METRICS_ANSWER = 'cfs:cluster-metrics-answer';
/** prom-client gives up on a worker after 5 s; a scrape waits a little longer for that verdict. */
const METRICS_WAIT_MS = 6000;

interface MetricsRequest {
  type: typeof METRICS_REQUEST;
  id: number;
}
interface MetricsAnswer {
  type: typeof METRICS_ANSWER;
  id: number;
  body?: string;
  error?: string;
}

/**
 * The primary side of `GET /metrics` with WORKERS > 1: a worker that receives a scrape asks the
 * primary, which collects every worker's registry over IPC with prom-client's AggregatorRegistry
 * (counters and histograms summed; gauges summed unless they say otherwise) and sends the text back.
 */
async function answerMetricsRequests(logger: Logger): Promise<void> {
  const { AggregatorRegistry } = await promClient();
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker: Worker, message: Partial<MetricsRequest> | null) => {
    if (message?.type !== METRICS_REQUEST || typeof message.id !== 'number') return;
    const id = message.id;
    const answer = (reply: Omit<MetricsAnswer, 'type' | 'id'>) => {
      if (worker.isConnected()) worker.send({ type: METRICS_ANSWER, id, ...reply } satisfies MetricsAnswer);
    };
    aggregator.clusterMetrics().then(
      (body) => answer({ body }),
      (error: unknown) => {
        logger.warn({ err: error }, 'cluster metrics: a worker did not answer');
        answer({ error: error instanceof Error ? error.message : String(error) });
      },
    );
  });
}

/**
 * In a worker of WORKERS > 1, what `GET /metrics` answers: the whole cluster's metrics, through the
 * primary (one scrape sees every worker, whichever accepted the connection). Registers `registry` as
 * this worker's share. Undefined outside a cluster worker: a single process answers its own registry.
 */
export async function clusterMetricsSource(registry: Registry): Promise<(() => Promise<string>) | undefined> {
  if (!cluster.isWorker || !process.send) return undefined;
  const { AggregatorRegistry } = await promClient();
  // Constructing one installs prom-client's listener that answers the primary with this worker's registries.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
  let nextId = 0;
  const waiting = new Map<number, { resolve(body: string): void; reject(error: Error): void }>();
  process.on('message', (message: Partial<MetricsAnswer> | null) => {
    if (message?.type !== METRICS_ANSWER || typeof message.id !== 'number') return;
    const request = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.body !== undefined) request?.resolve(message.body);
    else request?.reject(new Error(`cluster metrics: ${message.error ?? 'no answer'}`));
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('cluster metrics: the primary did not answer'));
      }, METRICS_WAIT_MS);
      waiting.set(id, {
        resolve: (body) => (clearTimeout(timer), resolve(body)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
      process.send?.({ type: METRICS_REQUEST, id } satisfies MetricsRequest);
    });
}

/**
 * prom-client, loaded when a cluster needs it. It is CommonJS: in the bundle (scripts/build.mjs) a
 * dynamic import gives its exports as `default` only, where Node's own loader also names them.
 */
async function promClient(): Promise<typeof import('prom-client')> {
  const loaded = (await import('prom-client')) as typeof import('prom-client') & { default?: typeof import('prom-client') };
  return loaded.AggregatorRegistry ? loaded : (loaded.default ?? loaded);
}
