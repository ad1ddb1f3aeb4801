/**
 * One severity scale for every contract (OpenAPI, protobuf, GraphQL), the version bump it requires,
 * and the two renderings of a changelog: Markdown for CHANGELOG.md and JSON for tools.
 *
 *   breaking       a client built against the old contract can fail (compile or runtime) → major
 *   dangerous      it keeps working but may meet something new at runtime (a new enum value, a newly
 *                  documented status, a default that changed, an input the server now ignores) → minor
 *   additive       something new a client may use; nothing to do (new operations, optional fields,
 *                  deprecation notices) → minor
 *   documentation  text only: descriptions, summaries, examples, comments, OpenAPI `links` → patch
 */

export type Severity = 'breaking' | 'dangerous' | 'additive' | 'documentation';
export type Bump = 'major' | 'minor' | 'patch' | 'none';
export type ContractKind = 'openapi' | 'graphql' | 'proto';

export const SEVERITIES: readonly Severity[] = ['breaking', 'dangerous', 'additive', 'documentation'];

/** One change, named the way a client team reads it. */
export interface ContractChange {
  severity: Severity;
  kind: ContractKind;
  /** The file under contracts/: `openapi/users.yaml`, `graphql/publishing.graphql`, `proto/cloud/compute/v1/instance.proto`. */
  file: string;
  /** The API as its contract titles it: `User Account API`, `Cloud API`. */
  api: string;
  /** What a client calls or names in code: `POST /api/users`, `Query.articles`, `cloud.compute.v1.InstanceService.Create`, `message cloud.compute.v1.Instance`. */
  subject: string;
  /** What changed, one sentence without the subject: `the property "bio" of the 200 response was added`. */
  change: string;
  /** What a client must do about it. */
  action: string;
  /** The checker findings this change stands for, when a tool named them (`buf:FIELD_SAME_NAME`, `graphql:ARG_CHANGED_KIND`). */
  rules?: string[];
}

/** The JSON `npm run contracts:changelog -- --json` prints (documented in docs/contracts.md). */
export interface Changelog {
  from: { label: string; version?: string };
  to: { label: string; version?: string };
  requiredBump: Bump;
  counts: Record<Severity, number>;
  changes: ContractChange[];
}

const BUMP_OF: Record<Severity, Bump> = { breaking: 'major', dangerous: 'minor', additive: 'minor', documentation: 'patch' };
const BUMP_RANK: Record<Bump, number> = { none: 0, patch: 1, minor: 2, major: 3 };

/** The smallest version bump a release with these changes needs. */
export function requiredBump(changes: readonly ContractChange[]): Bump {
  let bump: Bump = 'none';
  for (const change of changes) if (BUMP_RANK[BUMP_OF[change.severity]] > BUMP_RANK[bump]) bump = BUMP_OF[change.severity];
  return bump;
}

/** Orders and counts the changes: breaking first, then by file and subject. */
export function makeChangelog(from: Changelog['from'], to: Changelog['to'], changes: ContractChange[]): Changelog {
  const sorted = [...changes].sort(
    (a, b) => SEVERITIES.indexOf(a.severity) - SEVERITIES.indexOf(b.severity) || a.file.localeCompare(b.file) || a.subject.localeCompare(b.subject) || a.change.localeCompare(b.change),
  );
  const counts = { breaking: 0, dangerous: 0, additive: 0, documentation: 0 };
  for (const change of sorted) counts[change.severity]++;
  return { from, to, requiredBump: requiredBump(sorted), counts, changes: sorted };
}

function parseVersion(version: string): [number, number, number] {
  const match = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/.exec(version.trim());
  if (!match) throw new Error(`"${version}" is not a semantic version (major.minor.patch)`);
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

/** The bump from `released` to `next` (`none` when equal); throws when `next` is lower. */
export function bumpBetween(released: string, next: string): Bump {
  const [a, b] = [parseVersion(released), parseVersion(next)];
  for (const [index, bump] of (['major', 'minor', 'patch'] as const).entries()) {
    if (b[index]! > a[index]!) return bump;
    if (b[index]! < a[index]!) throw new Error(`version ${next} is lower than the released ${released}`);
  }
  return 'none';
}

/** Whether `actual` is at least `required` (a major bump satisfies a minor requirement). */
export function bumpSatisfies(actual: Bump, required: Bump): boolean {
  return BUMP_RANK[actual] >= BUMP_RANK[required];
}

/** The smallest version after `released` that satisfies `required`. */
export function nextVersion(released: string, required: Bump): string {
  const [major, minor, patch] = parseVersion(released);
  if (required === 'major') return `${major + 1}.0.0`;
  if (required === 'minor') return `${major}.${minor + 1}.0`;
  if (required === 'patch') return `${major}.${minor}.${patch + 1}`;
  return released;
}

const HEADINGS: Record<Severity, string> = {
  breaking: 'Breaking',
  dangerous: 'Dangerous',
  additive: 'Added',
  documentation: 'Documentation',
};

/** Marks the generated block, so `npm run contracts:release` can replace one pasted earlier. */
export const MARKDOWN_START = '<!-- contracts:changelog -->';
export const MARKDOWN_END = '<!-- /contracts:changelog -->';

/**
 * The Markdown to paste under "## Unreleased" in CHANGELOG.md: one `###` section per severity that has
 * changes, one bullet per change (`**API** (`file`), `subject`: change. Client: action.`), inside
 * markers. Changes that differ only in their subject are merged into one bullet.
 */
export function renderMarkdown(changelog: Changelog): string {
  const version = (side: Changelog['from']) => (side.version ? `${side.label} (${side.version})` : side.label);
  const lines = [
    MARKDOWN_START,
    `<!-- from ${version(changelog.from)} to ${version(changelog.to)}; required version bump: ${changelog.requiredBump} -->`,
  ];
  if (changelog.changes.length === 0) lines.push('', 'No contract changes.');
  for (const severity of SEVERITIES) {
    const changes = changelog.changes.filter((change) => change.severity === severity);
    if (changes.length === 0) continue;
    lines.push('', `### ${HEADINGS[severity]}`, '');
    const merged = new Map<string, { first: ContractChange; subjects: string[] }>();
    for (const change of changes) {
      const key = JSON.stringify([change.api, change.file, change.change, change.action]);
      const entry = merged.get(key);
      if (entry) {
        if (!entry.subjects.includes(change.subject)) entry.subjects.push(change.subject);
      } else merged.set(key, { first: change, subjects: [change.subject] });
    }
    for (const { first, subjects } of merged.values()) {
      const subject = subjects.map((name) => `\`${name}\``).join(', ');
      lines.push(`- **${first.api}** (\`${first.file}\`), ${subject}: ${sentence(first.change)} Client: ${sentence(first.action)}`);
    }
  }
  lines.push('', MARKDOWN_END);
  return `${lines.join('\n')}\n`;
}

function sentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}
