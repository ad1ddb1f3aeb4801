import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';

const ROOT = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);

interface Outcome {
  code: number;
  output: string;
}

/** Runs a contracts script of the repo over the copy in `workspace`. */
async function script(name: string, workspace: string, ...args: string[]): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', name), '--contracts', join(workspace, 'contracts'), ...args], { cwd: ROOT });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failure = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failure.code ?? -1, output: `${failure.stdout ?? ''}${failure.stderr ?? ''}` };
  }
}

/** A copy of the repo's contracts (with buf.yaml and the vendored protos), released as its own baseline. */
async function releasedWorkspace(): Promise<string> {
  const workspace = mkdtempSync(join(tmpdir(), 'breaking-'));
  cpSync(join(ROOT, 'buf.yaml'), join(workspace, 'buf.yaml'));
  cpSync(join(ROOT, 'third_party'), join(workspace, 'third_party'), { recursive: true });
  cpSync(join(ROOT, 'contracts'), join(workspace, 'contracts'), { recursive: true, filter: (path) => !path.includes('/baseline') });
  const release = await script('contracts-release.ts', workspace, '--version', '2.0.0');
  expect(release).toMatchObject({ code: 0 });
  return workspace;
}

function edit(workspace: string, file: string, change: (text: string) => string): void {
  const path = join(workspace, 'contracts', file);
  const before = readFileSync(path, 'utf8');
  const after = change(before);
  expect(after).not.toEqual(before);
  writeFileSync(path, after);
}

function editYaml(workspace: string, file: string, change: (doc: { paths: Record<string, unknown>; components: { schemas: Record<string, { properties: Record<string, unknown> }> } }) => void): void {
  edit(workspace, file, (text) => {
    const doc = parse(text);
    change(doc);
    return stringify(doc);
  });
}

describe('npm run breaking', () => {
  let workspace: string;
  beforeEach(async () => {
    workspace = await releasedWorkspace();
  });
  afterEach(() => rmSync(workspace, { recursive: true, force: true }));

  it('passes right after a release', async () => {
    const outcome = await script('breaking.ts', workspace);
    expect(outcome.output).toContain('No breaking changes.');
    expect(outcome.code).toBe(0);
  });

  it('fails with a sentence naming a removed proto field', async () => {
    edit(workspace, 'proto/cloud/common/v1/server_info_service.proto', (text) => text.replace(/\n\s*\/\/ The server version[^\n]*\n\s*string version = 2;/, ''));
    const outcome = await script('breaking.ts', workspace);
    expect(outcome.code).toBe(1);
    expect(outcome.output).toContain(
      'BREAKING proto/cloud/common/v1/server_info_service.proto, cloud.common.v1.GetServerInfoResponse.version: the field version (2) was removed. [buf:FIELD_NO_DELETE]',
    );
  });

  it('fails with a sentence naming a removed OpenAPI path', async () => {
    editYaml(workspace, 'openapi/users.yaml', (doc) => {
      delete doc.paths['/api/auth'];
    });
    const outcome = await script('breaking.ts', workspace);
    expect(outcome.code).toBe(1);
    expect(outcome.output).toContain('BREAKING openapi/users.yaml, /api/auth: the path was removed (every operation on it).');
  });

  it('fails with a sentence naming a request property that became required', async () => {
    edit(workspace, 'openapi/users.yaml', (text) => text.replace('required: [name, password, isAdmin]', 'required: [name, password, isAdmin, profilePicture]'));
    const outcome = await script('breaking.ts', workspace);
    expect(outcome.code).toBe(1);
    expect(outcome.output).toContain('BREAKING openapi/users.yaml, POST /api/users: the property "profilePicture" of the request body became required.');
  });

  it('fails with a sentence naming a removed GraphQL field', async () => {
    edit(workspace, 'graphql/publishing.graphql', (text) => text.replace(/\n\s*"The signed-in user\."\n\s*me: Writer!/, ''));
    const outcome = await script('breaking.ts', workspace);
    expect(outcome.code).toBe(1);
    expect(outcome.output).toContain('BREAKING graphql/publishing.graphql, Query.me: Query.me was removed. [graphql:FIELD_REMOVED]');
  });

  const shallow = execFileSync('git', ['rev-parse', '--is-shallow-repository'], { cwd: ROOT, encoding: 'utf8' }).trim() === 'true';
  (shallow ? it.skip : it)('compares with a git ref when asked (--against HEAD)', async () => {
    editYaml(workspace, 'openapi/users.yaml', (doc) => {
      delete doc.paths['/api/auth'];
    });
    const outcome = await script('breaking.ts', workspace, '--against', 'HEAD');
    expect(outcome.output).toContain('against git HEAD');
    expect(outcome.output).toContain('BREAKING openapi/users.yaml, /api/auth: the path was removed (every operation on it).');
    expect(outcome.code).toBe(1);
  });

  it('passes purely additive changes to every kind of contract with a minor version bump, and fails them without one', async () => {
    edit(workspace, 'proto/cloud/common/v1/server_info_service.proto', (text) => text.replace('string version = 2;', 'string version = 2;\n  // The build that runs.\n  string build = 3;'));
    editYaml(workspace, 'openapi/users.yaml', (doc) => {
      doc.paths['/api/extra'] = { get: { operationId: 'getExtra', security: [], responses: { '200': { description: 'ok' } } } };
      const info = doc.components.schemas.ServiceInfo;
      if (info) info.properties.build = { type: 'string' };
    });
    edit(workspace, 'graphql/publishing.graphql', (text) => text.replace('type Query {', 'type Query {\n  "A new field."\n  ping: String'));
    const [bumped, unchanged] = await Promise.all([script('breaking.ts', workspace, '--version', '2.1.0'), script('breaking.ts', workspace, '--version', '2.0.0')]);
    expect(bumped.output).toContain('No breaking changes.');
    expect(bumped.output).toContain('0 breaking, 0 dangerous, 4 additive, 0 documentation-only → required version bump: minor.');
    expect(bumped.code).toBe(0);
    expect(unchanged.output).toContain('set "version" in package.json to at least 2.1.0');
    expect(unchanged.code).toBe(1);
  });
});
