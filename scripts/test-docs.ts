/**
 * `npm run test:docs`: runs the shell snippets of README.md and docs/*.md that are marked runnable
 * (a fence opened with ```sh test), in order, one bash per file against a fresh server of its own
 * (the compiled server, PGlite in a temporary DATA_DIR, a free port), and stops at the first failing
 * command, naming the file and the line of its block. The marking convention is in docs/testing.md.
 *
 * A snippet is written for a reader: it talks to `localhost:8080` and runs from the repository root.
 * Here `localhost:8080` is replaced by the fresh server's address; the snippets run from the
 * repository root too, and the untracked files they leave there (key.json…) are removed afterwards.
 *
 * `npm run test:docs -- docs/iam.md README.md` runs those files only (in the order given); no
 * argument runs README.md and every docs/*.md. A file may set its server's environment with a line
 * `<!-- test-docs env: COMPUTE_WORK_MS=5000 -->` (KEY=VALUE pairs separated by spaces; invisible
 * when the Markdown is rendered), for an example that needs the server configured as its text says.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from './support/free-port.js';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const FENCE = /^```(?:sh|bash) test\s*$/;
const ENV_LINE = /^<!-- test-docs env:((?:\s+[A-Z][A-Z0-9_]*=\S*)+)\s*-->\s*$/;
/** What a file's snippets may take together, and the server to get ready (a cold PGlite start on a busy host). */
const FILE_TIMEOUT_MS = Number(process.env.TEST_DOCS_TIMEOUT_MS ?? 600_000);
const READY_TIMEOUT_MS = 300_000;

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

/** The server environment a file asks for with `<!-- test-docs env: KEY=VALUE … -->` lines. */
function serverEnv(markdown: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of markdown.split('\n')) {
    const match = ENV_LINE.exec(line);
    if (!match?.[1]) continue;
    for (const pair of match[1].trim().split(/\s+/)) {
      const equals = pair.indexOf('=');
      env[pair.slice(0, equals)] = pair.slice(equals + 1);
    }
  }
  return env;
}

async function startServer(dataDir: string, fileEnv: Record<string, string>): Promise<{ url: string; child: ChildProcess; output: () => string }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, ...fileEnv, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
  // A new PGlite data directory runs initdb: seconds on a quiet host, over a minute on a busy one.
  env.STARTUP_TIMEOUT_MS ??= String(READY_TIMEOUT_MS);
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [join(ROOT, 'dist/src/main.js')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
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

/** Files in the tree that git does not track and does not ignore: what a snippet leaves behind (key.json…). */
function untracked(): Set<string> {
  const listed = spawnSync('git', ['ls-files', '--others', '--exclude-standard', '-z'], { cwd: ROOT, encoding: 'utf8' });
  return new Set(listed.stdout.split('\0').filter(Boolean));
}

/** Removes a file a snippet left, and the directories it made for it once they are empty (.cfs-demo/…). */
function removeWithEmptyParents(file: string): void {
  rmSync(join(ROOT, file), { force: true });
  for (let dir = dirname(file); dir !== '.'; dir = dirname(dir)) {
    if (readdirSync(join(ROOT, dir)).length > 0) return;
    rmdirSync(join(ROOT, dir));
  }
}

/** One bash for the file's blocks, in order: variables carry from block to block, as for a reader. */
function script(blocks: Block[], url: string): string {
  // Aliases as in the reader's interactive shell (docs/cloud-api.md defines `bufcurl`).
  const lines = ['set -euo pipefail', 'shopt -s expand_aliases', 'trap \'echo "test:docs: failed in the block at line $TEST_DOCS_LINE (exit $?)" >&2\' ERR'];
  for (const block of blocks) lines.push(`TEST_DOCS_LINE=${block.line}`, block.text.replaceAll('http://localhost:8080', url).replaceAll('localhost:8080', url));
  return `${lines.join('\n')}\n`;
}

async function runFile(file: string, blocks: Block[], fileEnv: Record<string, string>): Promise<boolean> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cfs-docs-data-'));
  const before = untracked();
  const server = await startServer(dataDir, fileEnv);
  try {
    const path = join(dataDir, 'snippets.sh');
    writeFileSync(path, script(blocks, server.url));
    const bash = spawn('bash', [path], { cwd: ROOT, env: { ...process.env, CFS_SERVER: server.url }, stdio: ['ignore', 'inherit', 'inherit'] });
    const timer = setTimeout(() => bash.kill('SIGKILL'), FILE_TIMEOUT_MS);
    const code = await new Promise<number | null>((resolve) => bash.once('exit', (exitCode) => resolve(exitCode)));
    clearTimeout(timer);
    if (code !== 0) {
      console.error(`test:docs: ${file} failed (exit ${code}); the server said:\n${server.output().slice(-4000)}`);
      return false;
    }
    return true;
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((resolve) => (server.child.exitCode !== null ? resolve(undefined) : server.child.once('exit', resolve)));
    rmSync(dataDir, { recursive: true, force: true });
    for (const left of untracked()) if (!before.has(left)) removeWithEmptyParents(left);
  }
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

async function main(): Promise<void> {
  const files = filesToRun(process.argv.slice(2));
  const started = performance.now();
  let ran = 0;
  for (const file of files) {
    const markdown = readFileSync(join(ROOT, file), 'utf8');
    const blocks = runnableBlocks(markdown);
    if (blocks.length === 0) {
      if (process.argv.length > 2) console.log(`test:docs: ${file}: no runnable block`);
      continue;
    }
    const fileEnv = serverEnv(markdown);
    const envNote = Object.keys(fileEnv).length
      ? ` (server env ${Object.entries(fileEnv)
          .map(([key, value]) => `${key}=${value}`)
          .join(' ')})`
      : '';
    console.log(`test:docs: ${file}: ${blocks.length} block(s) at line ${blocks.map((block) => block.line).join(', ')}${envNote}`);
    const fileStarted = performance.now();
    if (!(await runFile(file, blocks, fileEnv))) process.exit(1);
    console.log(`test:docs: ${file} passed in ${((performance.now() - fileStarted) / 1000).toFixed(1)} s`);
    ran += blocks.length;
  }
  if (ran === 0) {
    console.error(`test:docs: no runnable block (\`\`\`sh test) in ${files.join(', ')}`);
    process.exit(1);
  }
  console.log(`test:docs: ${ran} block(s) passed in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

await main();
