/**
 * docs/cloud-api.md's client program and operator session, run as written against a live server.
 * The program's package imports are pointed at this checkout's sources (the contracts package is
 * built from them); the operator session runs from the checkout, as the page says (`node bin/cfs.js`).
 */
import { jest } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, type TestServer } from '../support/app.js';
import { budget } from '../support/budget.js';
import { GrpcTestClient } from '../support/grpc.js';
import { createProject, createServiceAccountWithKey } from '../modules/iam/support.js';

// Each example runs as a child process under tsx: the former fixed 240 s, scaled with the load like
// every other timeout (test/support/budget.ts).
jest.setTimeout(budget(80_000));

const ROOT = new URL('../../', import.meta.url).pathname;
const DOC = readFileSync(join(ROOT, 'docs/cloud-api.md'), 'utf8');
// The admin every README and docs snippet signs in as.
const ADMIN = { name: 'admin', password: 'change-me-please' };

let server: TestServer | undefined;
let grpc: GrpcTestClient | undefined;
let dir: string;

beforeAll(async () => {
  server = await startServer({ ADMIN_USERNAME: ADMIN.name, ADMIN_PASSWORD: ADMIN.password, COMPUTE_WORK_MS: '20' });
  grpc = new GrpcTestClient(server.url);
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  // Under the checkout, so the program's packages resolve from its node_modules.
  dir = mkdtempSync(join(ROOT, '.tmp/docs-cloud-api-'));
});
afterAll(async () => {
  grpc?.close();
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The first fenced block of `language` after `heading`. */
function block(heading: string, language: string): string {
  const section = DOC.slice(DOC.indexOf(heading));
  // ` test` marks a block npm run test:docs runs too (docs/testing.md).
  const match = new RegExp('```' + language + '(?: test)?\\n([\\s\\S]*?)```').exec(section);
  if (!match?.[1]) throw new Error(`docs/cloud-api.md has no ${language} block after "${heading}"`);
  return match[1];
}

function run(command: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir, ...env } }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

test("the client team's program creates, waits and lists with the SDK layer", async () => {
  const signIn = await server?.request('POST', '/api/auth', { body: ADMIN });
  const admin = signIn?.body.accessToken as string;
  const project = await createProject(grpc as GrpcTestClient, admin, 'sdk-docs');
  const key = await createServiceAccountWithKey(grpc as GrpcTestClient, admin, project, 'sdk-docs-robot');
  writeFileSync(join(dir, 'key.json'), JSON.stringify({ id: key.keyId, service_account_id: key.serviceAccountId, private_key: key.privateKey }));
  const program = block('## The SDK layer', 'ts')
    .replaceAll("'@contract-first-server/contracts/sdk'", `'${join(ROOT, 'src/sdk/index.ts')}'`)
    .replace(/'@contract-first-server\/contracts\/proto\/([^']+)\.js'/g, (_match, path: string) => `'${join(ROOT, 'generated/proto', path)}.ts'`);
  writeFileSync(join(dir, 'client.ts'), program);
  const result = await run(process.execPath, ['--import', 'tsx', 'client.ts'], { CFS_SERVER: server?.url ?? '', PROJECT: project });
  expect(result).toMatchObject({ code: 0, stderr: '' });
  const created = /^created (instance-\S+)$/m.exec(result.stdout)?.[1];
  expect(created).toBeDefined();
  expect(result.stdout).toContain(`${created} web-1 3`);
});

test("the operator's cfs session runs as written", async () => {
  // From the checkout, as the page says, with what its first block defines (the base URL, a scratch
  // directory, a run id).
  const session = `SCRATCH=$(mktemp -d); RUN=$(date +%s)\n${block("## cfs, the operator's command line", 'sh')}`;
  const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'bash',
      ['-euo', 'pipefail', '-c', session],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: dir, TMPDIR: dir, CFS_SERVER: server?.url ?? '' } },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
  expect(result.stderr).toMatch(/NOT_FOUND/);
  expect(result).toMatchObject({ code: 0 });
  expect(result.stdout).toMatch(/\*\s+shop\s+http:\S+\s+key file \S+shop-key\.json\s+project-/);
  expect(result.stdout).toMatch(/description: front end/);
  expect(result.stdout).toMatch(/web-1\s+project-\S+\s+STATE_STOPPED/);
  expect(result.stdout).toMatch(/exit 4\n/);
  expect(result.stdout).toMatch(/userProfile:/);
});
