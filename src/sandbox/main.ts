import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.js';
import { defaultOf } from '../settings/table.js';
import { createLogger } from '../logger.js';
import { openDatabase } from '../store/database.js';
import { RESET_PATH, sandboxExtension } from './extension.js';
import { cacheDirOf, defaultCredentials, readSeeded, seedKey, writeSeeded, type SandboxCredentials } from './cache.js';
import { sandboxDataDir } from './data-dir.js';
import { resumeSeed, seed, seedCode, type SeededState } from './seed.js';
import { SeedSnapshot } from './snapshot.js';

/** How often the sandbox checks that the process that started it is still there. */
const ORPHAN_CHECK_MS = 500;
const USAGE = `usage: cfs-server sandbox [--port N] [--host H] [--fresh] [--timings]
                                                 the whole server in memory, seeded (docs/contracts.md, Sandbox);
                                                 --fresh seeds anew instead of loading the seed kept from the last start
       cfs-server sandbox reset [--url URL]       put a running sandbox back to its seeded state
`;

/**
 * Sandbox defaults: the environment may set any of them (ADMIN_* and SUPERUSER_* too), and every
 * other setting of README.md's table applies as on a normal server.
 */
function sandboxEnvironment(env: NodeJS.ProcessEnv, credentials: SandboxCredentials, port: string | undefined, host: string | undefined): NodeJS.ProcessEnv {
  const defaults: Record<string, string> = {
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    // Simulated work of the cloud operations: long enough to see RUNNING, short enough to wait for.
    COMPUTE_WORK_MS: '50',
    // A reset must be seen at once: no principal outlives it in a cache.
    PRINCIPAL_CACHE_MS: '0',
  };
  if (env.ADMIN_USERNAME === undefined && env.ADMIN_PASSWORD === undefined) {
    Object.assign(defaults, { ADMIN_USERNAME: credentials.admin.name, ADMIN_PASSWORD: credentials.admin.password });
  }
  if (env.SUPERUSER_EMAIL === undefined && env.SUPERUSER_PASSWORD === undefined) {
    Object.assign(defaults, { SUPERUSER_EMAIL: credentials.superuser.email, SUPERUSER_PASSWORD: credentials.superuser.password });
  }
  const merged: NodeJS.ProcessEnv = { ...defaults, ...env };
  if (port !== undefined) merged.PORT = port;
  if (host !== undefined) merged.HOST = host;
  // In memory, whatever the environment says: a sandbox never touches a real database.
  delete merged.DATABASE_URL;
  delete merged.DATABASE_LISTEN_URL;
  merged.DATA_DIR = 'memory://';
  merged.MIGRATE = 'true';
  merged.WORKERS = '1';
  return merged;
}

async function reset(url: string): Promise<void> {
  const response = await fetch(new URL(RESET_PATH, url), { method: 'POST' }).catch((error: unknown) => {
    process.stderr.write(`cfs-server sandbox reset: no sandbox answers at ${url} (${error instanceof Error ? error.message : String(error)})\n`);
    process.exit(1);
  });
  const text = await response.text();
  if (!response.ok) {
    process.stderr.write(`cfs-server sandbox reset: ${url} answered ${response.status}: ${text}\n`);
    process.exit(1);
  }
  const { rows, ms } = JSON.parse(text) as { rows: number; ms: number };
  process.stdout.write(`sandbox at ${url} reset to its seed (${rows} rows) in ${ms} ms\n`);
}

async function start(options: { port?: string; host?: string; fresh?: boolean; timings?: boolean }): Promise<void> {
  const started = performance.now();
  const marks: string[] = [];
  let last = started;
  let lastCpu = process.cpuUsage();
  // CPU beside wall time: on a busy machine the wall time says more about the neighbours than the start.
  const mark = (name: string) => {
    const now = performance.now();
    const cpu = process.cpuUsage(lastCpu);
    marks.push(`${name} ${Math.round(now - last)} ms (${Math.round((cpu.user + cpu.system) / 1000)} CPU)`);
    last = now;
    lastCpu = process.cpuUsage();
  };
  const cacheDir = options.fresh ? undefined : cacheDirOf(process.env);
  const env = sandboxEnvironment(process.env, defaultCredentials(cacheDir), options.port, options.host);
  let config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  // The store's scratch directory goes at exit, also when a signal stops the start half-way.
  const scratch = sandboxDataDir();
  const stopEarly = (signal: NodeJS.Signals) => process.exit(signal === 'SIGINT' ? 130 : 143);
  process.once('SIGTERM', stopEarly).once('SIGINT', stopEarly);
  const loading = import('../server/build.js');
  // The migrated template the build ships (dist/pglite-template.tar.gz): no initdb, no migrations to run.
  const { shippedPgliteTemplate, templateDigest } = await import('../store/pglite-template.js');
  const template = await shippedPgliteTemplate();
  const credentials: SandboxCredentials = {
    admin: { name: env.ADMIN_USERNAME!, password: env.ADMIN_PASSWORD! },
    superuser: { email: env.SUPERUSER_EMAIL!, password: env.SUPERUSER_PASSWORD! },
  };
  const key = cacheDir && template ? seedKey(await templateDigest(template), seedCode(), credentials) : undefined;
  const kept = cacheDir && key ? readSeeded<{ state: SeededState; keyText: string }>(cacheDir, key) : undefined;
  mark(kept ? 'kept seed' : 'template');
  // Unpacked into the scratch directory and opened like a restart (data-dir.ts); initdb when there is no template.
  const database = await openDatabase({
    dataDir: scratch.dataDir,
    newDatabaseTemplate: async () => kept?.dump ?? template,
    pgliteSharedBuffersMb: config.pgliteSharedBuffersMb,
  });
  mark('database');
  let snapshot: SeedSnapshot | undefined;
  const extension = sandboxExtension(() => snapshot);
  const { build } = await loading;
  const app = await build(config, { database, logger, extend: extension.extend });
  mark('build');
  const bound = await app.listen(config.port, config.host);
  const shownHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const url = `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${bound}`;
  const stop = () =>
    void app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  process.off('SIGTERM', stopEarly).off('SIGINT', stopEarly).once('SIGTERM', stop).once('SIGINT', stop);
  // npx runs the bin through `sh -c`: a SIGTERM to npx (a script's `kill %1`) ends npx and that shell
  // but not this process, which would go on holding the port. So the sandbox ends with the process
  // that started it (reparented: its parent is gone). Under an init (a container's PID 1) there is nothing to watch.
  const parent = process.ppid;
  if (parent > 1) {
    const orphaned = setInterval(() => {
      if (process.ppid === parent) return;
      clearInterval(orphaned);
      logger.info({ parent }, 'sandbox: the process that started it is gone; stopping');
      stop();
    }, ORPHAN_CHECK_MS);
    orphaned.unref();
  }
  const seeded = new SeedSnapshot(app.db.knex);
  let state: SeededState;
  if (kept) {
    // The kept dump holds the seed and its snapshot: fresh tokens are all it needs.
    state = await resumeSeed(url, kept.state.state, kept.state.keyText);
    mark('sign-in');
  } else {
    state = await seed(url, credentials, mark);
    await seeded.take();
    mark('snapshot');
    if (cacheDir && key) {
      // After a CHECKPOINT the dump opens with next to nothing to recover; uncompressed, it unpacks fastest.
      await app.db.knex.raw('CHECKPOINT');
      const pglite = (app.db.knex.client as { pglite: { dumpDataDir(compression: 'none'): Promise<Blob> } }).pglite;
      const dump = Buffer.from(await (await pglite.dumpDataDir('none')).arrayBuffer());
      writeSeeded(cacheDir, key, dump, { state, keyText: readFileSync(state.keyFile, 'utf8') });
      mark('kept for the next start');
    }
  }
  snapshot = seeded;
  const stateFile = join(dirname(state.keyFile), 'sandbox.json');
  writeFileSync(stateFile, `${JSON.stringify({ url, ...state }, null, 2)}\n`, { mode: 0o600 });
  const seconds = ((performance.now() - started) / 1000).toFixed(2);
  const used = process.cpuUsage();
  process.stdout.write(
    [
      `cfs-server sandbox: ready on ${url} in ${seconds} s — every API in memory, seeded from the contracts' examples (nothing you change is kept)`,
      ...(options.timings ? [`  timings: ${marks.join(', ')}; ${Math.round((used.user + used.system) / 1000)} ms CPU in all`] : []),
      `  admin token      (users, cloud)   ${state.admin.token}`,
      `                                    ${state.admin.name} / ${state.admin.password}`,
      `  superuser token  (publishing)     ${state.superuser.token}`,
      `                                    ${state.superuser.email} / ${state.superuser.password}`,
      `  service-account key file (cloud)  ${state.keyFile}`,
      `  everything seeded (ids, tokens)   ${stateFile}`,
      `  force an answer: Prefer: code=404 | example=default | dynamic=true (REST), prefer: code=NOT_FOUND (RPC)`,
      `  reset: curl -X POST ${url}${RESET_PATH}   or   npx cfs-server sandbox reset --url ${url}`,
      '',
    ].join('\n'),
  );
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: {
      port: { type: 'string', short: 'p' },
      host: { type: 'string' },
      url: { type: 'string' },
      fresh: { type: 'boolean' },
      timings: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
  });
  if (values.help) return void process.stdout.write(USAGE);
  const [command] = positionals;
  if (command === 'reset') return reset(values.url ?? process.env.SANDBOX_URL ?? `http://127.0.0.1:${values.port ?? process.env.PORT ?? defaultOf('port')}`);
  if (command !== undefined) {
    process.stderr.write(`cfs-server sandbox: unknown command "${command}"\n${USAGE}`);
    process.exit(2);
  }
  return start(values);
}

main().catch((error: unknown) => {
  process.stderr.write(`cfs-server sandbox: cannot start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
