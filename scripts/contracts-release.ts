/**
 * `npm run contracts:release`: moves the baseline forward, deliberately. Computes the contracts'
 * changelog since the previous release, refuses when package.json's version is a smaller bump than
 * the changes require (as `npm run breaking` does), rewrites contracts/baseline from the current
 * contracts (OpenAPI and GraphQL copies, a buf module image of contracts/proto, release.json with the
 * version), and turns CHANGELOG.md's "## Unreleased" into "## <version> — <date>" holding the
 * generated contract changes (replacing a block pasted earlier from `npm run contracts:changelog`),
 * under a new empty "## Unreleased".
 *   --contracts <dir>  the contracts to release (default contracts/)
 *   --baseline <dir>   where the release goes (default <contracts>/baseline)
 *   --version <x.y.z>  the version to release (default package.json's)
 *   --changelog <file> the changelog to write (default CHANGELOG.md beside <contracts>; skipped when absent)
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { bumpBetween, bumpSatisfies, MARKDOWN_END, MARKDOWN_START, nextVersion, renderMarkdown, SEVERITIES } from './contracts/changes.js';
import { computeChangelog } from './contracts/changelog.js';
import { baselineContracts, BUF, option, RELEASE_FILE, ROOT, workingContracts } from './contracts/contract-sets.js';

const argv = process.argv.slice(2);
const contractsDir = resolve(option(argv, '--contracts') ?? join(ROOT, 'contracts'));
const baselineDir = resolve(option(argv, '--baseline') ?? join(contractsDir, 'baseline'));
const changelogFile = resolve(option(argv, '--changelog') ?? join(dirname(contractsDir), 'CHANGELOG.md'));

const current = workingContracts(contractsDir, option(argv, '--version'));
const version = current.version!;
const previous = baselineContracts(baselineDir);
const hadRelease = existsSync(baselineDir) && (previous.openapi.size > 0 || previous.graphql.size > 0 || previous.proto !== undefined);
const changelog = computeChangelog(previous, current);
if (hadRelease && previous.version !== undefined) {
  const bump = bumpBetween(previous.version, version);
  if (!bumpSatisfies(bump, changelog.requiredBump)) {
    console.error(
      `Not released: ${version} is ${bump === 'none' ? 'no' : `a ${bump}`} bump over ${previous.version}, but the contract changes require a ${changelog.requiredBump} bump; ` +
        `set "version" in package.json to at least ${nextVersion(previous.version, changelog.requiredBump)} first.`,
    );
    process.exit(1);
  }
}

for (const folder of ['openapi', 'graphql']) rmSync(join(baselineDir, folder), { recursive: true, force: true });
mkdirSync(baselineDir, { recursive: true });
for (const [folder, files] of [
  ['openapi', current.openapi],
  ['graphql', current.graphql],
] as const) {
  if (files.size === 0) continue;
  mkdirSync(join(baselineDir, folder), { recursive: true });
  for (const name of files.keys()) copyFileSync(join(contractsDir, folder, name), join(baselineDir, folder, name));
}
const image = join(baselineDir, 'proto.binpb');
if (current.proto) {
  // A module image (not the workspace): `buf breaking contracts/proto --against <image>` compares like with like.
  execFileSync(BUF, ['build', current.proto.startsWith(ROOT) ? relative(ROOT, current.proto) : current.proto, '-o', image], { cwd: ROOT, stdio: 'inherit' });
} else {
  rmSync(image, { force: true });
}
writeFileSync(join(baselineDir, RELEASE_FILE), `${JSON.stringify({ version }, null, 2)}\n`);
writeFileSync(
  join(baselineDir, 'README.md'),
  `# Released contracts (baseline)\n\nWritten by \`npm run contracts:release\` at package version ${version}; never edit by hand.\n` +
    `\`${RELEASE_FILE}\` records that version: \`npm run breaking\` requires package.json's version to be a large\n` +
    'enough bump over it for the changes since (breaking → major, dangerous or additive → minor,\n' +
    'documentation-only → patch), and `npm run contracts:changelog` lists those changes. The released\n' +
    'contracts are openapi/*.yaml, graphql/*.graphql and proto.binpb (`buf build contracts/proto`, a module\n' +
    'image: a FileDescriptorSet with source info). See docs/contracts.md, "Changelog and versioning".\n',
);

/** Renames "## Unreleased" to the release and puts the generated changes in it, in place of a pasted block. */
function writeChangelogSection(): string {
  if (!existsSync(changelogFile)) return `no ${relative(ROOT, changelogFile) || changelogFile}: changelog section not written`;
  const text = readFileSync(changelogFile, 'utf8');
  const heading = /^## Unreleased[^\n]*\n/m.exec(text);
  if (!heading) return `${relative(ROOT, changelogFile)} has no "## Unreleased" heading: changelog section not written`;
  const bodyStart = heading.index + heading[0].length;
  const next = text.slice(bodyStart).search(/^## /m);
  const bodyEnd = next === -1 ? text.length : bodyStart + next;
  let body = text.slice(bodyStart, bodyEnd);
  const generated = hadRelease ? renderMarkdown(changelog) : '';
  const start = body.indexOf(MARKDOWN_START);
  const end = body.indexOf(MARKDOWN_END);
  if (start !== -1 && end > start) body = `${body.slice(0, start)}${generated}${body.slice(end + MARKDOWN_END.length).replace(/^\n/, '')}`;
  else if (generated !== '') body = `${body.trimEnd()}\n\n${generated}`;
  const date = new Date().toISOString().slice(0, 10);
  const released = `## Unreleased\n\n## ${version} — ${date}\n${body.startsWith('\n') ? '' : '\n'}${body.trimEnd()}\n\n`;
  writeFileSync(changelogFile, `${text.slice(0, heading.index)}${released}${text.slice(bodyEnd)}`);
  return `${relative(ROOT, changelogFile) || changelogFile}: "## ${version} — ${date}" written`;
}

console.log(`Released ${relative(ROOT, contractsDir) || contractsDir} as ${version} into ${relative(ROOT, baselineDir) || baselineDir}:`);
if (hadRelease) {
  console.log(
    `  changes since ${previous.version ?? 'the previous release'}: ${SEVERITIES.map((severity) => `${changelog.counts[severity]} ${severity}`).join(', ')}`,
  );
  for (const change of changelog.changes.filter((entry) => entry.severity === 'breaking'))
    console.log(`    - breaking: ${change.file}, ${change.subject}: ${change.change}.`);
} else {
  console.log('  the first release: every contract is new.');
}
console.log(`  ${writeChangelogSection()}`);
