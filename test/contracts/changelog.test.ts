import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { computeChangelog } from '../../scripts/contracts/changelog.js';
import { SEVERITIES, type Changelog, type ContractChange } from '../../scripts/contracts/changes.js';
import { baselineContracts, workingContracts } from '../../scripts/contracts/contract-sets.js';
import { budget } from '../support/budget.js';

// `npm run contracts:changelog`, `npm run breaking` (the version gate) and the changelog engine behind
// them, on a scratch copy of contracts/ released as its own baseline at 2.0.0, and on the repository.

const ROOT = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);

interface Outcome {
  code: number;
  stdout: string;
  output: string;
}

async function script(name: string, ...args: string[]): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', name), ...args], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, output: stdout + stderr };
  } catch (error) {
    const failure = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failure.code ?? -1, stdout: failure.stdout ?? '', output: `${failure.stdout ?? ''}${failure.stderr ?? ''}` };
  }
}

type OpenApiDoc = { paths: Record<string, Record<string, { responses: Record<string, Record<string, unknown>> }>>; components: { schemas: Record<string, { properties: Record<string, unknown> }> } };

let released: string;
let workspace: string;

function edit(file: string, change: (text: string) => string): void {
  const path = join(workspace, 'contracts', file);
  const before = readFileSync(path, 'utf8');
  const after = change(before);
  expect(after).not.toEqual(before);
  writeFileSync(path, after);
}

function editYaml(file: string, change: (doc: OpenApiDoc) => void): void {
  edit(file, (text) => {
    const doc = parse(text) as OpenApiDoc;
    change(doc);
    return stringify(doc);
  });
}

function changelogOf(): Changelog {
  const contracts = join(workspace, 'contracts');
  return computeChangelog(baselineContracts(join(contracts, 'baseline')), workingContracts(contracts, '2.0.0'));
}

/** The one change matching `where`; fails listing them all when there is not exactly one. */
function only(changelog: Changelog, where: Partial<ContractChange> & { matching?: RegExp }): ContractChange {
  const { matching, ...fields } = where;
  const found = changelog.changes.filter((change) => Object.entries(fields).every(([key, value]) => change[key as keyof ContractChange] === value) && (!matching || matching.test(change.change)));
  if (found.length !== 1) throw new Error(`expected one change like ${JSON.stringify(where)}, got: ${JSON.stringify(changelog.changes, null, 2)}`);
  return found[0]!;
}

beforeAll(async () => {
  // A copy of the repo's contracts (with buf.yaml and the vendored protos), released as its own baseline.
  released = mkdtempSync(join(tmpdir(), 'changelog-'));
  cpSync(join(ROOT, 'buf.yaml'), join(released, 'buf.yaml'));
  cpSync(join(ROOT, 'third_party'), join(released, 'third_party'), { recursive: true });
  cpSync(join(ROOT, 'contracts'), join(released, 'contracts'), { recursive: true, filter: (path) => !path.includes('/baseline') });
  const release = await script('contracts-release.ts', '--contracts', join(released, 'contracts'), '--version', '2.0.0');
  expect(release).toMatchObject({ code: 0 });
  expect(JSON.parse(readFileSync(join(released, 'contracts/baseline/release.json'), 'utf8'))).toEqual({ version: '2.0.0' });
}, budget(60_000));

afterAll(() => {
  if (released) rmSync(released, { recursive: true, force: true });
});

beforeEach(() => {
  workspace = mkdtempSync(join(tmpdir(), 'changelog-case-'));
  cpSync(released, workspace, { recursive: true });
});

afterEach(() => {
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

describe('the changelog of a scratch copy of contracts/', () => {
  it('is empty, requiring no bump, right after a release', () => {
    const changelog = changelogOf();
    expect(changelog.changes).toEqual([]);
    expect(changelog.requiredBump).toBe('none');
    expect(changelog.from.version).toBe('2.0.0');
  }, budget(30_000));

  it('(a) a removed response field is breaking and requires a major bump', () => {
    editYaml('openapi/users.yaml', (doc) => {
      delete doc.components.schemas.UserDto!.properties.onboardingDone;
    });
    const changelog = changelogOf();
    const change = only(changelog, { subject: 'GET /api/users/{id}', matching: /onboardingDone/ });
    expect(change).toMatchObject({ severity: 'breaking', kind: 'openapi', file: 'openapi/users.yaml', api: 'User Account API', change: 'the property "onboardingDone" of the 200 response was removed' });
    expect(change.action).toMatch(/stop reading it/);
    expect(changelog.changes.every((entry) => entry.severity === 'breaking')).toBe(true);
    expect(changelog.requiredBump).toBe('major');
  }, budget(30_000));

  it('(b) an added optional field is additive and requires a minor bump', () => {
    editYaml('openapi/users.yaml', (doc) => {
      doc.components.schemas.UserDto!.properties.nickname = { type: 'string', maxLength: 100 };
      doc.components.schemas.CreateUserDto!.properties.nickname = { type: 'string', maxLength: 100 };
    });
    const changelog = changelogOf();
    expect(only(changelog, { subject: 'GET /api/users/{id}', matching: /nickname/ })).toMatchObject({ severity: 'additive', change: 'the property "nickname" of the 200 response was added' });
    expect(only(changelog, { subject: 'POST /api/users', matching: /nickname" of the request body/ })).toMatchObject({ severity: 'additive', change: 'the optional property "nickname" of the request body was added' });
    expect(changelog.counts).toMatchObject({ breaking: 0, dangerous: 0 });
    expect(changelog.requiredBump).toBe('minor');
  }, budget(30_000));

  it('(c) a renamed proto field is breaking (JSON name and code change), with buf breaking findings attached, and requires a major bump', () => {
    edit('proto/cloud/common/v1/server_info_service.proto', (text) => text.replace('string version = 2;', 'string server_version = 2;'));
    const changelog = changelogOf();
    const change = only(changelog, { kind: 'proto' });
    expect(change).toMatchObject({
      severity: 'breaking',
      file: 'proto/cloud/common/v1/server_info_service.proto',
      api: 'Cloud API',
      subject: 'cloud.common.v1.GetServerInfoResponse.server_version',
      change: 'the field 2 was renamed from version to server_version (JSON version → serverVersion; binary wire unchanged)',
    });
    expect(change.action).toMatch(/rename version to server_version in code/);
    expect(change.rules).toEqual(expect.arrayContaining(['buf:FIELD_SAME_NAME', 'buf:FIELD_SAME_JSON_NAME']));
    expect(changelog.requiredBump).toBe('major');
  }, budget(30_000));

  it('(d) a GraphQL argument made required is breaking and requires a major bump', () => {
    edit('graphql/publishing.graphql', (text) => text.replace('articles(filters: ArticleFilters,', 'articles(filters: ArticleFilters!,'));
    const changelog = changelogOf();
    expect(only(changelog, { kind: 'graphql' })).toMatchObject({
      severity: 'breaking',
      file: 'graphql/publishing.graphql',
      subject: 'Query.articles',
      change: 'Query.articles arg filters has changed type from ArticleFilters to ArticleFilters!',
      rules: ['graphql:ARG_CHANGED_KIND'],
    });
    expect(changelog.requiredBump).toBe('major');
  }, budget(30_000));

  it('classifies what other changes bring: a proto request field (additive), OpenAPI links and descriptions (documentation-only), a GraphQL enum value (dangerous)', () => {
    edit('proto/cloud/common/v1/operation_service.proto', (text) =>
      text.replace(/(message ListOperationsRequest \{[^}]*?)\n\}/, '$1\n  // The order of the list.\n  string order_by = 15;\n}'),
    );
    editYaml('openapi/users.yaml', (doc) => {
      const created = doc.paths['/api/users']!.post!.responses['200']!;
      created.links = { ...(created.links as Record<string, unknown> | undefined), ChangelogTestLink: { operationId: 'getUser', parameters: { id: '$response.body#/id' } } };
      created.description = 'The user, as created.';
    });
    edit('graphql/publishing.graphql', (text) => text.replace('enum Role {\n  superuser', 'enum Role {\n  owner\n  superuser'));
    const changelog = changelogOf();
    expect(only(changelog, { kind: 'proto' })).toMatchObject({
      severity: 'additive',
      subject: 'cloud.common.v1.ListOperationsRequest.order_by',
      change: 'the field order_by (15, string) was added',
    });
    expect(only(changelog, { kind: 'openapi', matching: /link/ })).toMatchObject({ severity: 'documentation', subject: 'POST /api/users, the 200 response', change: 'the link "ChangelogTestLink" was added' });
    expect(only(changelog, { kind: 'openapi', matching: /description/ })).toMatchObject({ severity: 'documentation', subject: 'POST /api/users, the 200 response', change: 'the description changed' });
    expect(only(changelog, { kind: 'graphql' })).toMatchObject({ severity: 'dangerous', subject: 'Role', change: 'owner was added to enum type Role' });
    expect(changelog.counts).toEqual({ breaking: 0, dangerous: 1, additive: 1, documentation: 2 });
    expect(changelog.requiredBump).toBe('minor');
  }, budget(30_000));

  it('requires only a patch bump for documentation-only changes', () => {
    edit('graphql/publishing.graphql', (text) => text.replace('"Topics by title."', '"Topics, by title."'));
    edit('proto/cloud/common/v1/server_info_service.proto', (text) => text.replace('// The server version (semantic versioning).', '// The server version (semver).'));
    const changelog = changelogOf();
    expect(changelog.changes.map((change) => [change.severity, change.subject, change.change])).toEqual([
      ['documentation', 'Query.topics', 'the description changed'],
      ['documentation', 'cloud.common.v1.GetServerInfoResponse.version', 'the comment changed'],
    ]);
    expect(changelog.requiredBump).toBe('patch');
  }, budget(30_000));
});

describe('npm run contracts:changelog and the version gate (npm run breaking)', () => {
  it('prints (a) as Markdown and JSON, and the gate fails with a minor bump and passes with a major one', async () => {
    editYaml('openapi/users.yaml', (doc) => {
      delete doc.components.schemas.UserDto!.properties.onboardingDone;
    });
    const contracts = join(workspace, 'contracts');
    const [markdown, json, minor, major] = await Promise.all([
      script('contracts-changelog.ts', '--contracts', contracts, '--version', '2.1.0'),
      script('contracts-changelog.ts', '--contracts', contracts, '--json', '--version', '2.1.0'),
      script('breaking.ts', '--contracts', contracts, '--version', '2.1.0'),
      script('breaking.ts', '--contracts', contracts, '--version', '3.0.0'),
    ]);
    expect(markdown.code).toBe(0);
    expect(markdown.stdout).toContain('required version bump: major');
    // The same removal in every answer that carries a UserDto, merged into one bullet per place.
    expect(markdown.stdout).toContain(
      '\n- **User Account API** (`openapi/users.yaml`), `GET /api/users/{id}`, `POST /api/users`, `PUT /api/users/{id}`: the property "onboardingDone" of the 200 response was removed. Client: stop reading it: it is no longer sent.\n',
    );
    expect(markdown.stdout).toContain('`POST /api/auth`: the property "user.onboardingDone" of the 200 response was removed.');
    expect(markdown.stdout.indexOf('### Breaking')).toBeGreaterThan(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ requiredBump: 'major', counts: { breaking: 5, dangerous: 0, additive: 0, documentation: 0 }, from: { version: '2.0.0' }, to: { version: '2.1.0' } });

    expect(minor.code).toBe(1);
    expect(minor.output).toContain('BREAKING openapi/users.yaml, GET /api/users/{id}: the property "onboardingDone" of the 200 response was removed.');
    expect(minor.output).toContain('The version 2.1.0 is a minor bump over the released 2.0.0, but the contract changes require a major bump: set "version" in package.json to at least 3.0.0');
    expect(major.code).toBe(0);
    expect(major.output).toContain('Version 3.0.0 over the released 2.0.0: a major bump, enough for major.');
  }, budget(120_000));
});

describe('npm run contracts:release', () => {
  it('refuses a version bump smaller than required, else records the version and writes the changelog section in place of a pasted block', async () => {
    editYaml('openapi/users.yaml', (doc) => {
      doc.components.schemas.UserDto!.properties.nickname = { type: 'string', maxLength: 100 };
    });
    const changelog = join(workspace, 'CHANGELOG.md');
    writeFileSync(
      changelog,
      '# Changelog\n\n## Unreleased\n\n### Changed\n\n- A behaviour no schema shows.\n\n<!-- contracts:changelog -->\npasted earlier\n<!-- /contracts:changelog -->\n\n## 2.0.0 — 2026-11-26\n\n- Older.\n',
    );
    const contracts = join(workspace, 'contracts');
    const refused = await script('contracts-release.ts', '--contracts', contracts, '--version', '2.0.1');
    expect(refused.code).toBe(1);
    expect(refused.output).toContain('Not released: 2.0.1 is a patch bump over 2.0.0, but the contract changes require a minor bump');
    expect(JSON.parse(readFileSync(join(contracts, 'baseline/release.json'), 'utf8'))).toEqual({ version: '2.0.0' });

    const release = await script('contracts-release.ts', '--contracts', contracts, '--version', '2.1.0');
    expect(release.code).toBe(0);
    expect(JSON.parse(readFileSync(join(contracts, 'baseline/release.json'), 'utf8'))).toEqual({ version: '2.1.0' });
    const text = readFileSync(changelog, 'utf8');
    const date = new Date().toISOString().slice(0, 10);
    expect(text.startsWith(`# Changelog\n\n## Unreleased\n\n## 2.1.0 — ${date}\n\n### Changed\n\n- A behaviour no schema shows.\n\n<!-- contracts:changelog -->\n`)).toBe(true);
    expect(text).not.toContain('pasted earlier');
    expect(text).toContain('### Added\n\n- **User Account API** (`openapi/users.yaml`), `GET /api/users`: the property "[].nickname" of the 200 response was added.');
    expect(text).toContain('\n- **User Account API** (`openapi/users.yaml`), `GET /api/users/{id}`, `POST /api/users`, `PUT /api/users/{id}`: the property "nickname" of the 200 response was added.');
    expect(text).toContain('<!-- /contracts:changelog -->\n\n## 2.0.0 — 2026-11-26\n\n- Older.\n');
    // Released: nothing left to change, and the gate is satisfied at the released version.
    const gate = await script('breaking.ts', '--contracts', contracts, '--version', '2.1.0');
    expect(gate.output).toContain('0 breaking, 0 dangerous, 0 additive, 0 documentation-only → required version bump: none.');
    expect(gate.code).toBe(0);
  }, budget(150_000));
});

describe('npm run contracts:changelog on this repository (the working tree against contracts/baseline)', () => {
  let markdown: Outcome;
  let json: Outcome;
  beforeAll(async () => {
    [markdown, json] = await Promise.all([script('contracts-changelog.ts'), script('contracts-changelog.ts', '--json')]);
  }, budget(90_000));

  it('runs clean and prints JSON of the documented shape (docs/contracts.md)', () => {
    expect(json).toMatchObject({ code: 0 });
    const changelog = JSON.parse(json.stdout) as Changelog;
    expect(Object.keys(changelog).sort()).toEqual(['changes', 'counts', 'from', 'requiredBump', 'to']);
    expect(changelog.from.label).toBe('the baseline contracts/baseline');
    expect(changelog.from.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(['major', 'minor', 'patch', 'none']).toContain(changelog.requiredBump);
    for (const change of changelog.changes) {
      expect(SEVERITIES).toContain(change.severity);
      expect(['openapi', 'graphql', 'proto']).toContain(change.kind);
      expect(change.file).toMatch(/^(openapi\/.+\.yaml|graphql\/.+\.graphql|proto\/.+\.proto)$/);
      for (const key of ['api', 'subject', 'change', 'action'] as const) expect(change[key]).toEqual(expect.stringMatching(/\S/));
      expect(Object.keys(change).every((key) => ['severity', 'kind', 'file', 'api', 'subject', 'change', 'action', 'rules'].includes(key))).toBe(true);
    }
    expect(Object.fromEntries(SEVERITIES.map((severity) => [severity, changelog.changes.filter((change) => change.severity === severity).length]))).toEqual(changelog.counts);
    const expected = changelog.counts.breaking > 0 ? 'major' : changelog.counts.dangerous + changelog.counts.additive > 0 ? 'minor' : changelog.counts.documentation > 0 ? 'patch' : 'none';
    expect(changelog.requiredBump).toBe(expected);
  });

  it('prints Markdown sections ready for CHANGELOG.md: marked, one ### heading per severity present, one bullet per change', () => {
    expect(markdown).toMatchObject({ code: 0 });
    const changelog = JSON.parse(json.stdout) as Changelog;
    const lines = markdown.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('<!-- contracts:changelog -->');
    expect(lines[1]).toMatch(/^<!-- from .* to .*; required version bump: (major|minor|patch|none) -->$/);
    expect(lines[lines.length - 1]).toBe('<!-- /contracts:changelog -->');
    const headings = lines.filter((line) => line.startsWith('#'));
    const present = { breaking: '### Breaking', dangerous: '### Dangerous', additive: '### Added', documentation: '### Documentation' };
    expect(headings).toEqual(SEVERITIES.filter((severity) => changelog.counts[severity] > 0).map((severity) => present[severity]));
    for (const line of lines.slice(2, -1)) {
      if (line === '' || line.startsWith('### ') || line === 'No contract changes.') continue;
      // One bullet per (merged) change: the API in bold, the file and subjects in code spans, then the sentence and the client action.
      expect(line).toMatch(/^- \*\*[^*]+\*\* \(`[^`]+`\), `[^`]+`(, `[^`]+`)*: .+\. Client: .+\.$/);
      expect((line.match(/`/g) ?? []).length % 2).toBe(0);
    }
    const bullets = lines.filter((line) => line.startsWith('- ')).length;
    expect(bullets).toBeGreaterThan(0);
    expect(bullets).toBeLessThanOrEqual(changelog.changes.length);
  });
});
