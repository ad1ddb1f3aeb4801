import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startServer, type TestServer } from '../support/app.js';
import { budget } from '../support/budget.js';

/**
 * README.md's client-team program, as written, in a fresh folder: the contracts package packed
 * (`npm run contracts:bundle`, `npm pack`), the README's own install lines run there, then its
 * type-check and run commands, against a live server (only the server's address is changed).
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);
const env = { ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('npm_') && key !== 'NODE_OPTIONS')), npm_config_prefer_offline: 'true' };
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const section = README.slice(README.indexOf('### Contracts for client teams'));
const commands = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
const program = /```ts\n([\s\S]*?)```/.exec(section)?.[1] ?? '';

let server: TestServer | undefined;
let scratch: string;
beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'readme-snippet-'));
  server = await startServer({ ADMIN_USERNAME: 'admin', ADMIN_PASSWORD: 'change-me-please' });
}, budget(30_000));
afterAll(async () => {
  await server?.close();
  rmSync(scratch, { recursive: true, force: true });
});

test(
  "the client team's program installs, type-checks and runs in a fresh folder as written",
  async () => {
    expect(commands).toMatch(/npm install \.\/contract-first-server-contracts-/);
    const out = join(scratch, 'contracts');
    await run(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts/contracts-bundle.ts'), '--out', out], { cwd: ROOT, env });
    const { stdout: packed } = await run('npm', ['pack', '--pack-destination', scratch, '--silent'], { cwd: out, env });
    const tarball = packed.trim().split('\n').pop() ?? '';
    const project = join(scratch, 'client');
    mkdirSync(project);
    copyFileSync(join(scratch, tarball), join(project, tarball));
    const lines = commands
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
    await run('bash', ['-euo', 'pipefail', '-c', lines.join('\n')], { cwd: project, env, maxBuffer: 16 << 20 });

    const dedent = program.replace(/^ {2}/gm, '');
    writeFileSync(join(project, 'client.ts'), dedent.replaceAll('http://localhost:8080', server!.url));
    const check = /`(npx tsc [^`]+)`/.exec(dedent)?.[1] ?? '';
    const start = /`(npx tsx [^`]+)`/.exec(dedent)?.[1] ?? '';
    expect(check).toContain('client.ts');
    const typecheck = await run('bash', ['-c', check], { cwd: project, env }).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? 'failed',
    );
    expect(typecheck).toBe('');
    const { stdout } = await run('bash', ['-c', start], { cwd: project, env });
    expect(stdout).toBe('admin\ncontract-first-server\n');
  },
  budget(300_000),
);
