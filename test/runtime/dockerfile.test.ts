import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { scratchDatabase } from '../../scripts/support/fresh-store.js';
import { openDatabase } from '../../src/store/database.js';
import { pgliteTemplatePath } from '../support/template.js';
import { budget } from '../support/budget.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);

interface Instruction {
  keyword: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** The Dockerfile as stages of instructions: comments dropped, `\` continuations joined. */
function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue; // a comment inside a continued instruction
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    logical.push(`${pending}${line}`.trim());
    pending = '';
  }
  const stages: Stage[] = [];
  for (const line of logical) {
    const match = /^(\w+)\s+([\s\S]*)$/.exec(line);
    if (!match) throw new Error(`not an instruction: ${line}`);
    const keyword = (match[1] ?? '').toUpperCase();
    const args = match[2] ?? '';
    if (keyword === 'FROM') {
      const [from = '', as, name] = args.split(/\s+/);
      stages.push({ from, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`${keyword} before FROM`);
    stage.instructions.push({ keyword, args });
  }
  return stages;
}

/** An exec-form (JSON array) command, or undefined for the shell form. */
function execForm(args: string): string[] | undefined {
  try {
    const parsed: unknown = JSON.parse(args);
    return Array.isArray(parsed) && parsed.every((part) => typeof part === 'string') ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** `ENV A=1 B=2` (the only form the Dockerfile uses) as a record. */
function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of stage.instructions.filter((instruction) => instruction.keyword === 'ENV')) {
    for (const pair of args.split(/\s+/)) {
      const [name = '', ...value] = pair.split('=');
      env[name] = value.join('=');
    }
  }
  return env;
}

const stages = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const runtime = stages.at(-1) as Stage;
const last = (keyword: string) => runtime.instructions.filter((instruction) => instruction.keyword === keyword).at(-1);

describe('Dockerfile', () => {
  it('is multi-stage: the build stage builds with dev dependencies, the runtime stage gets the bundle and the production externals only', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const build = stages.find((stage) => stage.instructions.some((instruction) => instruction.keyword === 'RUN' && /\bnpm run build\b/.test(instruction.args)));
    expect(build?.name).toBeDefined();
    expect(
      build?.instructions.some(
        (instruction) => instruction.keyword === 'RUN' && /\bnpm ci\b/.test(instruction.args) && !/--omit[= ]dev/.test(instruction.args),
      ),
    ).toBe(true);
    // The server is bundled with its packages (scripts/build.mjs): the runtime stage installs nothing and
    // copies node_modules from the build stage's install of the few externals only, production ones.
    expect(runtime.instructions.filter((instruction) => instruction.keyword === 'RUN' && /\bnpm (ci|install)\b/.test(instruction.args))).toEqual([]);
    const externals = build?.instructions.find((instruction) => instruction.keyword === 'RUN' && instruction.args.includes('dist/runtime/package.json'));
    expect(externals?.args).toMatch(/\bnpm (ci|install)\b.*--omit[= ]dev/);
    expect(
      runtime.instructions.some(
        (instruction) =>
          instruction.keyword === 'COPY' &&
          instruction.args.includes(`--from=${build?.name}`) &&
          /\/runtime\/node_modules\s+\.\/node_modules$/.test(instruction.args),
      ),
    ).toBe(true);
    // The compiled server comes from the build stage, not from the context (which excludes dist/).
    expect(
      runtime.instructions.some(
        (instruction) => instruction.keyword === 'COPY' && instruction.args.includes(`--from=${build?.name}`) && instruction.args.includes('dist/src'),
      ),
    ).toBe(true);
    // And the contracts the build pre-parsed, or the container parses YAML at every start (docs/architecture.md).
    expect(
      runtime.instructions.some(
        (instruction) => instruction.keyword === 'COPY' && instruction.args.includes(`--from=${build?.name}`) && instruction.args.includes('dist/prebuilt'),
      ),
    ).toBe(true);
    // And the migrated PGlite template a new DATA_DIR starts from, or its first start runs initdb (issue 29).
    expect(
      runtime.instructions.some(
        (instruction) =>
          instruction.keyword === 'COPY' &&
          instruction.args.includes(`--from=${build?.name}`) &&
          /dist\/pglite-template\.tar\.gz(\s|$)/.test(instruction.args) &&
          instruction.args.includes('dist/pglite-template.json'),
      ),
    ).toBe(true);
    expect(readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n')).toEqual(expect.arrayContaining(['node_modules', 'dist', 'data']));
  });

  it('runs as a non-root user, on port 5000, with a node-based HEALTHCHECK and node itself as the exec-form ENTRYPOINT (cfs-server, CMD start)', () => {
    const user = last('USER')?.args.split(':')[0];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(envOf(runtime).PORT).toBe('5000');

    const healthcheck = last('HEALTHCHECK')?.args ?? '';
    const probe = execForm(healthcheck.replace(/^(--\S+\s+)*CMD\s+/, ''));
    expect(probe?.[0]).toBe('node');
    expect(healthcheck).not.toMatch(/\b(curl|wget)\b/);

    // PID 1 must be node: `npm start` (or a shell) as PID 1 would not pass docker stop's SIGTERM on.
    expect(execForm(last('ENTRYPOINT')?.args ?? '')).toEqual(['node', 'bin/cfs-server.js']);
    expect(execForm(last('CMD')?.args ?? '')).toEqual(['start']);
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('the container CMD', () => {
  // An image-like /app in a temp directory: a fresh build of dist/ (the build stage's `npm run build`),
  // the contracts and docs the server reads at run time, package.json and the installed dependencies.
  let app: string;
  let env: NodeJS.ProcessEnv;
  let dropDatabase: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    app = mkdtempSync(join(tmpdir(), 'cfs-image-'));
    await run(process.execPath, [join(ROOT, 'scripts/build.mjs'), '--out', join(app, 'dist')], { cwd: ROOT });
    for (const entry of ['contracts', 'docs', 'node_modules', 'package.json']) symlinkSync(join(ROOT, entry), join(app, entry));
    // A copy, not a link: Node resolves a linked entry script to its real path, whose ../dist is the checkout's.
    cpSync(join(ROOT, 'bin'), join(app, 'bin'), { recursive: true });

    const port = await freePort();
    env = { PATH: process.env.PATH, ...envOf(runtime), PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' };
    const url = process.env.DATABASE_URL;
    if (url) {
      const database = await scratchDatabase(url, 'runtime', process.env.TEST_TEMPLATE_DB);
      env.DATABASE_URL = database.url;
      dropDatabase = database.drop;
    } else {
      // An existing data directory, as a volume would hold after the first start (initdb costs seconds).
      env.DATA_DIR = join(app, 'data');
      const seeded = await openDatabase({ dataDir: env.DATA_DIR, loadDataDir: new Blob([readFileSync(pgliteTemplatePath())]) });
      await seeded.close();
    }
  }, budget(20_000));

  afterAll(async () => {
    await dropDatabase?.();
    rmSync(app, { recursive: true, force: true });
  });

  it(
    'answers the HEALTHCHECK, and on SIGTERM shuts down gracefully and exits 0 within the grace',
    async () => {
      const [command = '', ...args] = [...(execForm(last('ENTRYPOINT')?.args ?? '') ?? []), ...(execForm(last('CMD')?.args ?? '') ?? [])];
      expect(command).toBe('node');
      const child = spawn(process.execPath, args, { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once('exit', (code, signal) => resolve({ code, signal })),
      );

      // The server logs `listening` once the port is open (pino JSON lines).
      await new Promise<void>((resolve, reject) => {
        const onData = () => {
          if (output.includes('"msg":"listening"')) resolve();
        };
        child.stdout.on('data', onData);
        void exited.then(({ code }) => reject(new Error(`the server exited with ${code} before listening:\n${output}`)));
      });

      const probe = execForm((last('HEALTHCHECK')?.args ?? '').replace(/^(--\S+\s+)*CMD\s+/, '')) ?? [];
      const healthcheck = () =>
        run(process.execPath, probe.slice(1), { env }).then(
          () => 0,
          (error: { code?: number }) => error.code ?? 1,
        );
      // Ready needs the database (and its listener) up: poll the probe as docker would, bounded.
      let health = 1;
      for (let attempt = 0; attempt < 50 && health !== 0; attempt++) health = await healthcheck();
      expect(health).toBe(0);

      const grace = Number(env.SHUTDOWN_GRACE_MS ?? 10_000);
      const signalled = Date.now();
      child.kill('SIGTERM');
      const result = await Promise.race([exited, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), grace + 2000).unref())]);
      if (result === 'timeout') child.kill('SIGKILL');
      expect(result).toEqual({ code: 0, signal: null });
      expect(Date.now() - signalled).toBeLessThan(grace);
      expect(output).toContain('"msg":"shutting down"');
      // Once stopped, the probe reports unhealthy.
      expect(await healthcheck()).not.toBe(0);
    },
    budget(20_000),
  );
});
