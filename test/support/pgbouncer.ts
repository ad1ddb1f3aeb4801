import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { budget } from './budget.js';
import { freePort } from '../../scripts/support/free-port.js';

/** Debian's PgBouncer (1.18 on bookworm), as CI installs it. */
export const PGBOUNCER = '/usr/sbin/pgbouncer';

export interface PgBouncer {
  /** `url` with its host and port replaced by PgBouncer's. */
  url: string;
  /** Everything PgBouncer wrote (it logs to stderr with `-v`-less defaults: connections and errors). */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer in front of the PostgreSQL server of `url`, in transaction mode and otherwise with
 * its default settings, on a free loopback port, from an ini and userlist in a temporary directory
 * (auth_type trust, as the test PostgreSQL). Fails with how to install it when it is missing. `stop`
 * kills it and removes the directory; a start that fails cleans up the same way. PgBouncer refuses to
 * run as root: as root it is started with `-u nobody`, and its files are readable by everyone.
 */
export async function startPgBouncer(url: string): Promise<PgBouncer> {
  if (!existsSync(PGBOUNCER)) throw new Error(`${PGBOUNCER} is missing: install Debian's pgbouncer (apt-get install pgbouncer), as .ci/run does`);
  const target = new URL(url);
  const dir = mkdtempSync(join(tmpdir(), 'cfs-pgbouncer-'));
  const port = await freePort();
  const user = decodeURIComponent(target.username || 'postgres');
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`);
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      // No Unix socket: the default directory (/tmp) is shared with other runs.
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      '',
    ].join('\n'),
  );
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    chmodSync(dir, 0o755);
    for (const file of ['pgbouncer.ini', 'userlist.txt']) chmodSync(join(dir, file), 0o644);
  }
  const child = spawn(PGBOUNCER, [...(asRoot ? ['-u', 'nobody'] : []), join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let onOutput = () => undefined as void;
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      onOutput();
    });
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // It says so once the port is open.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`pgbouncer did not listen on ${port}: ${output}`)), budget(5000));
      onOutput = () => {
        if (!output.includes(`listening on 127.0.0.1:${port}`)) return;
        clearTimeout(timer);
        resolve();
      };
      onOutput();
      void exited.then(() => (clearTimeout(timer), reject(new Error(`pgbouncer exited: ${output}`))));
    });
  } catch (error) {
    await stop();
    throw error;
  }
  const through = new URL(url);
  through.hostname = '127.0.0.1';
  through.port = String(port);
  return { url: through.toString(), log: () => output, stop };
}
