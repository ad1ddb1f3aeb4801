import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { budget } from '../support/budget.js';
import { buildServer, spawnServer, watch, type CompiledServer } from './compiled-server.js';

/**
 * The first start (issue 29 items 2 and 3), on the compiled server as `npm start` runs it: settings
 * that cannot work fail before the store opens and leave no DATA_DIR; a new DATA_DIR is loaded from
 * the build's migrated template, or made by initdb when that template does not match; a person at a
 * terminal reads where it serves before the JSON log.
 */
let built: CompiledServer;
let dir: string;
let manifestPath: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cfs-first-start-'));
  built = await buildServer();
  manifestPath = join(built.main, '../../pglite-template.json');
}, budget(30_000));
afterAll(() => {
  built?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A port another process holds for the duration of `work`. */
async function withTakenPort<T>(work: (port: number) => Promise<T>): Promise<T> {
  const holder = createServer().listen(0, '127.0.0.1');
  await once(holder, 'listening');
  const address = holder.address();
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  try {
    return await work(address.port);
  } finally {
    holder.close();
  }
}

/** Starts the built server on a new DATA_DIR, answers its log once it listens, and stops it. */
async function firstStart(dataDir: string): Promise<{ log: Array<Record<string, unknown>>; readyz: number }> {
  const child = spawnServer(built.main, { DATA_DIR: dataDir });
  const watched = watch(child);
  try {
    const port = await watched.listening;
    const readyz = (await fetch(`http://127.0.0.1:${port}/readyz`)).status;
    child.kill('SIGTERM');
    await watched.exited;
    const log = watched
      .output()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    return { log, readyz };
  } finally {
    child.kill('SIGKILL');
  }
}

test(
  'a start on a PORT in use fails with one line naming PORT, exit 1, and creates no DATA_DIR',
  async () => {
    const dataDir = join(dir, 'port-taken');
    await withTakenPort(async (port) => {
      const watched = watch(spawnServer(built.main, { PORT: String(port), DATA_DIR: dataDir }));
      expect(await watched.exited).toBe(1);
      expect(watched.errors().trim().split('\n')).toEqual([
        `cannot start: PORT ${port} is already in use (HOST 127.0.0.1): stop the other server or choose another PORT`,
      ]);
    });
    expect(existsSync(dataDir)).toBe(false);
  },
  budget(10_000),
);

describe('TLS files are checked before the store opens, each error naming its variable', () => {
  let tlsDir: string;
  beforeAll(() => {
    tlsDir = mkdtempSync(join(dir, 'tls-'));
    for (const name of ['one', 'other']) {
      execFileSync(
        'openssl',
        ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=localhost'].concat([
          '-keyout',
          join(tlsDir, `${name}-key.pem`),
          '-out',
          join(tlsDir, `${name}-cert.pem`),
        ]),
        { stdio: 'ignore' },
      );
    }
    writeFileSync(join(tlsDir, 'not-pem.pem'), 'not a certificate\n');
  });

  test.each<[string, () => Record<string, string>, RegExp]>([
    [
      'a TLS_CERT that does not exist',
      () => ({ TLS_CERT: '/nonexistent.pem', TLS_KEY: join(tlsDir, 'one-key.pem') }),
      /^cannot start: TLS_CERT \/nonexistent\.pem cannot be read: no such file \(ENOENT\)$/,
    ],
    [
      'a TLS_KEY that does not exist',
      () => ({ TLS_CERT: join(tlsDir, 'one-cert.pem'), TLS_KEY: join(tlsDir, 'missing.pem') }),
      /^cannot start: TLS_KEY \S+missing\.pem cannot be read: no such file \(ENOENT\)$/,
    ],
    [
      'a TLS_CERT that is not PEM',
      () => ({ TLS_CERT: join(tlsDir, 'not-pem.pem'), TLS_KEY: join(tlsDir, 'one-key.pem') }),
      /^cannot start: TLS_CERT \S+not-pem\.pem is not a PEM certificate: /,
    ],
    [
      'a TLS_KEY of another certificate',
      () => ({ TLS_CERT: join(tlsDir, 'one-cert.pem'), TLS_KEY: join(tlsDir, 'other-key.pem') }),
      /^cannot start: TLS_KEY \S+other-key\.pem is not the key of TLS_CERT \S+one-cert\.pem: /,
    ],
  ])(
    '%s: one line naming it, exit 1, no DATA_DIR',
    async (name, env, line) => {
      const dataDir = join(dir, `tls-${name.replaceAll(' ', '-')}`);
      const watched = watch(spawnServer(built.main, { ...env(), DATA_DIR: dataDir }));
      expect(await watched.exited).toBe(1);
      const lines = watched.errors().trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(line);
      expect(existsSync(dataDir)).toBe(false);
    },
    budget(10_000),
  );
});

test(
  "a new DATA_DIR is loaded from the build's migrated template (no initdb), and the listening line carries its URL",
  async () => {
    const { log, readyz } = await firstStart(join(dir, 'from-template'));
    expect(readyz).toBe(200);
    const messages = log.map((line) => line.msg);
    expect(messages).toContain("new embedded database from the build's migrated template");
    expect(messages.filter((msg) => String(msg).includes('initdb'))).toEqual([]);
    const listening = log.find((line) => line.msg === 'listening');
    expect(listening).toMatchObject({ url: `http://127.0.0.1:${String(listening?.port)}`, database: 'pglite' });
  },
  budget(10_000),
);

test(
  'when the build’s template does not match this code (another PGlite made it), a new DATA_DIR is made by initdb and migrated as before',
  async () => {
    const original = readFileSync(manifestPath, 'utf8');
    writeFileSync(manifestPath, JSON.stringify({ ...(JSON.parse(original) as object), pglite: '0.0.1' }));
    try {
      const { log, readyz } = await firstStart(join(dir, 'by-initdb'));
      expect(readyz).toBe(200);
      const messages = log.map((line) => line.msg);
      expect(messages).toContain('creating the embedded database with initdb (no matching template in this build)');
      expect(messages).not.toContain("new embedded database from the build's migrated template");
    } finally {
      writeFileSync(manifestPath, original);
    }
  },
  // initdb: seconds on a quiet machine, over a minute on a busy one (issue 29).
  budget(30_000),
);

const hasScript = (() => {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

(hasScript ? test : test.skip)(
  'on a terminal, one line names the URL, the interfaces and the store before the JSON log',
  async () => {
    const dataDir = join(dir, 'terminal');
    // util-linux `script` gives the server a terminal; its own process group, so the test can stop it all.
    const child = spawn('script', ['-qefc', `${JSON.stringify(process.execPath)} ${JSON.stringify(built.main)}`, '/dev/null'], {
      env: { PATH: process.env.PATH ?? '', HOST: '0.0.0.0', PORT: '0', LOG_LEVEL: 'info', DATA_DIR: dataDir },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    const exited = once(child, 'exit');
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          output += chunk;
          if (/"msg":"listening"/.test(output)) resolve();
        });
        void exited.then(() => reject(new Error(`exited before listening: ${output}`)));
      });
      const lines = output.split(/\r?\n/).filter(Boolean);
      const listening = JSON.parse(lines.find((line) => line.includes('"msg":"listening"')) ?? '{}') as { port: number };
      const human = lines.filter((line) => !line.startsWith('{'));
      expect(human).toEqual([
        `serving http://localhost:${listening.port} (every interface, HOST 0.0.0.0): REST, GraphQL and gRPC on this one port; store: PGlite in ${dataDir}`,
      ]);
      expect(lines.indexOf(human[0]!)).toBeLessThan(lines.findIndex((line) => line.includes('"msg":"listening"')));
    } finally {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
      await exited;
    }
  },
  budget(10_000),
);
