/**
 * `npm run test:docs`: runs the shell snippets of README.md and docs/*.md that are marked runnable
 * (a fence opened with ```sh test), as a reader would, and proves they can be run again.
 *
 * - One server for everything, started once with the settings the pages say the walkthroughs expect
 *   (README.md, "Walkthroughs"): the compiled server, PGlite in a temporary DATA_DIR, a free port.
 * - Each file's blocks run in one bash (variables carry from block to block, as in a reader's
 *   terminal), **twice in a row** against that same server: a page that creates a name it does not
 *   make unique, or needs a fresh server, fails its second run.
 * - They run in a copy of the checkout (a `git clone --shared` with the working tree's changes
 *   committed on top, node_modules linked, dist copied), whose `git status --ignored` must stay as it
 *   was after every run: a snippet writes its files under `mktemp -d` (TMPDIR is a directory of
 *   this run), never into the tree.
 * - The snippets reach the server through `$CFS_SERVER` (each page defaults it to
 *   http://localhost:8080); here it is the test server's URL. A runnable block that names
 *   localhost:8080 otherwise, defines an alias, or calls `npx cfs` fails before anything runs.
 *
 * `npm run test:docs -- docs/iam.md README.md` runs those files only (in the order given); no
 * argument runs README.md and every docs/*.md. The conventions are in docs/testing.md.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { freePort } from './support/free-port.js';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const FENCE = /^```(?:sh|bash) test\s*$/;
/** What one run of a file's snippets may take, and the server to get ready (a cold PGlite start on a busy host). */
const FILE_TIMEOUT_MS = Number(process.env.TEST_DOCS_TIMEOUT_MS ?? 600_000);
const READY_TIMEOUT_MS = 300_000;
/** How many times each file runs against the same server. */
const RUNS = 2;

/**
 * The server the walkthroughs expect, started once (README.md, "Walkthroughs", says the same):
 * the publishing superuser docs/publishing.md signs in as, and instance work long enough that
 * docs/cloud-api.md's conflict example meets a running operation on a loaded machine.
 */
const SERVER_ENV = { SUPERUSER_EMAIL: 'root@example.com', SUPERUSER_PASSWORD: 'change-me-please', COMPUTE_WORK_MS: '2000' };

interface Block {
  line: number;
  text: string;
}

/** The runnable blocks of one Markdown file, with the line each starts on. */
function runnableBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  let current: Block | undefined;
  for (const [index, line] of markdown.split('\n').entries()) {
    if (current) {
      if (/^```\s*$/.test(line)) {
        blocks.push(current);
        current = undefined;
      } else current.text += `${line}\n`;
    } else if (FENCE.test(line)) current = { line: index + 1, text: '' };
  }
  return blocks;
}

/** What a runnable block must not do: each finding names the file and line. */
function lint(file: string, blocks: Block[]): string[] {
  const findings: string[] = [];
  for (const block of blocks)
    for (const [offset, line] of block.text.split('\n').entries()) {
      const at = `${file}:${block.line + 1 + offset}`;
      const code = line.replace(/(^|\s)#.*$/, ''); // comments may show addresses and outputs
      if (code.replace('${CFS_SERVER:-http://localhost:8080}', '').includes('localhost:8080'))
        findings.push(`${at}: use "$CFS_SERVER" (the page's base URL, default http://localhost:8080), not localhost:8080`);
      if (/(^|[;&|]\s*)alias\s/.test(code)) findings.push(`${at}: an alias does not work in a script; use a shell function`);
      if (/\bnpx\s+cfs\b/.test(code)) findings.push(`${at}: "npx cfs" searches the whole tree on every call; use "node bin/cfs.js"`);
    }
  return findings;
}

async function startServer(cwd: string, dataDir: string): Promise<{ url: string; child: ChildProcess; output: () => string }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, ...SERVER_ENV, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
  // A new PGlite data directory runs initdb: seconds on a quiet host, over a minute on a busy one.
  env.STARTUP_TIMEOUT_MS ??= String(READY_TIMEOUT_MS);
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [join(cwd, 'dist/src/main.js')], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}:\n${output}`);
    const ready = await fetch(`${url}/readyz`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) return { url, child, output: () => output };
    if (Date.now() > deadline) throw new Error(`the server was not ready within ${READY_TIMEOUT_MS} ms:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function git(cwd: string, args: string[]): string {
  const run = spawnSync('git', args, { cwd, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`git ${args.join(' ')} (in ${cwd}) failed: ${run.stderr}`);
  return run.stdout;
}

/**
 * A copy of the checkout as it is now: a shared clone with the working tree's changes (tracked and
 * untracked, not ignored) committed on top, `main` as a branch (docs/contracts.md compares against it),
 * node_modules linked and dist copied (the compiled server and CLI bundle).
 */
function copyCheckout(into: string): string {
  const copy = join(into, 'checkout');
  git(into, ['clone', '--quiet', '--shared', ROOT, copy]);
  const changed = git(ROOT, ['ls-files', '-z', '--modified', '--others', '--exclude-standard']).split('\0').filter(Boolean);
  for (const file of changed) {
    const from = join(ROOT, file);
    if (existsSync(from)) {
      mkdirSync(dirname(join(copy, file)), { recursive: true });
      cpSync(from, join(copy, file));
    } else rmSync(join(copy, file), { force: true });
  }
  git(copy, ['add', '--all']);
  git(copy, [
    '-c',
    'user.name=test-docs',
    '-c',
    'user.email=test-docs@localhost',
    'commit',
    '--quiet',
    '--allow-empty',
    '--no-verify',
    '-m',
    'test:docs: the working tree',
  ]);
  if (git(copy, ['branch', '--list', 'main']).trim() === '' && git(copy, ['branch', '--remotes', '--list', 'origin/main']).trim() !== '')
    git(copy, ['branch', '--quiet', 'main', 'origin/main']);
  symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(copy, 'node_modules'));
  // .gitignore's `node_modules/` matches a directory, not this link to one.
  appendFileSync(join(copy, '.git/info/exclude'), '/node_modules\n');
  cpSync(join(ROOT, 'dist'), join(copy, 'dist'), { recursive: true, preserveTimestamps: true });
  return copy;
}

/** `git status` of the copy, ignored files included, less what the copy was given (node_modules, dist). */
function treeStatus(copy: string): string[] {
  return git(copy, ['status', '--porcelain', '--ignored', '--untracked-files=all'])
    .split('\n')
    .filter((line) => line !== '' && !/^!! (node_modules|dist\/)/.test(line));
}

/** One bash for the file's blocks, in order: variables carry from block to block, as for a reader. */
function script(blocks: Block[]): string {
  const lines = ['set -euo pipefail', 'trap \'echo "test:docs: failed in the block at line $TEST_DOCS_LINE (exit $?)" >&2\' ERR'];
  for (const block of blocks) lines.push(`TEST_DOCS_LINE=${block.line}`, block.text);
  return `${lines.join('\n')}\n`;
}

async function runOnce(file: string, blocks: Block[], copy: string, url: string, scratch: string): Promise<boolean> {
  const tmp = mkdtempSync(join(scratch, 'tmp-'));
  const path = join(scratch, `snippets-${file.replaceAll('/', '-')}.sh`);
  writeFileSync(path, script(blocks));
  const env: NodeJS.ProcessEnv = { ...process.env, CFS_SERVER: url, TMPDIR: tmp, XDG_CONFIG_HOME: join(tmp, 'config') };
  for (const name of ['CFS_TOKEN', 'CFS_PROFILE', 'INIT_CWD']) delete env[name];
  const bash = spawn('bash', [path], { cwd: copy, env, stdio: ['ignore', 'inherit', 'inherit'] });
  const timer = setTimeout(() => bash.kill('SIGKILL'), FILE_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => bash.once('exit', (exitCode) => resolve(exitCode)));
  clearTimeout(timer);
  if (code !== 0) {
    console.error(`test:docs: ${file} failed (exit ${code})`);
    return false;
  }
  const left = treeStatus(copy);
  if (left.length > 0) {
    console.error(`test:docs: ${file} changed the checkout (write under "$(mktemp -d)" instead):\n  ${left.join('\n  ')}`);
    return false;
  }
  return true;
}

/** The files named on the command line (relative to where npm was run), else README.md and docs/*.md. */
function filesToRun(args: string[]): string[] {
  if (args.length === 0)
    return [
      'README.md',
      ...readdirSync(join(ROOT, 'docs'))
        .filter((name) => name.endsWith('.md'))
        .sort()
        .map((name) => `docs/${name}`),
    ];
  return args.map((arg) => {
    const file = relative(ROOT, resolve(process.env.INIT_CWD ?? process.cwd(), arg));
    if (!existsSync(join(ROOT, file)) || !file.endsWith('.md') || file.startsWith('..')) {
      console.error(`test:docs: ${arg} is not a Markdown file of this repository`);
      process.exit(2);
    }
    return file;
  });
}

async function main(): Promise<number> {
  const files = filesToRun(process.argv.slice(2));
  const plan = files.map((file) => ({ file, blocks: runnableBlocks(readFileSync(join(ROOT, file), 'utf8')) })).filter((entry) => entry.blocks.length > 0);
  if (plan.length === 0) {
    console.error(`test:docs: no runnable block (\`\`\`sh test) in ${files.join(', ')}`);
    return 1;
  }
  const findings = plan.flatMap(({ file, blocks }) => lint(file, blocks));
  if (findings.length > 0) {
    console.error(`test:docs: ${findings.join('\ntest:docs: ')}`);
    return 1;
  }
  if (!existsSync(join(ROOT, 'dist/src/main.js'))) {
    console.error('test:docs: no compiled server (dist/src/main.js): run npm run build');
    return 1;
  }
  const started = performance.now();
  const scratch = mkdtempSync(join(tmpdir(), 'cfs-docs-'));
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    const copy = copyCheckout(scratch);
    const before = treeStatus(copy);
    if (before.length > 0) throw new Error(`the copy of the checkout is not clean to begin with:\n  ${before.join('\n  ')}`);
    server = await startServer(copy, join(scratch, 'data'));
    console.log(
      `test:docs: one server for every page at ${server.url} (${Object.entries(SERVER_ENV)
        .map(([key, value]) => `${key}=${value}`)
        .join(' ')}); each page runs ${RUNS} times in a copy of the checkout`,
    );
    let ran = 0;
    for (const { file, blocks } of plan) {
      for (let run = 1; run <= RUNS; run++) {
        console.log(`test:docs: ${file} (run ${run} of ${RUNS}): ${blocks.length} block(s) at line ${blocks.map((block) => block.line).join(', ')}`);
        const fileStarted = performance.now();
        if (!(await runOnce(file, blocks, copy, server.url, scratch))) {
          console.error(`test:docs: the server said:\n${server.output().slice(-4000)}`);
          return 1;
        }
        console.log(`test:docs: ${file} (run ${run} of ${RUNS}) passed in ${((performance.now() - fileStarted) / 1000).toFixed(1)} s`);
        ran += blocks.length;
      }
    }
    console.log(
      `test:docs: ${ran} block runs (${plan.length} file(s) × ${RUNS}) passed in ${((performance.now() - started) / 1000).toFixed(1)} s; the checkout copy stayed clean`,
    );
    return 0;
  } finally {
    if (server) {
      const { child } = server;
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
    }
    rmSync(scratch, { recursive: true, force: true });
  }
}

process.exitCode = await main();
