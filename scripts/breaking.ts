/**
 * `npm run breaking` (CI): the version gate. Computes the contracts' changelog since the last release
 * (contracts/baseline, written by `npm run contracts:release`), the version bump it requires
 * (breaking → major, dangerous or additive → minor, documentation-only → patch), and fails when
 * package.json's version is a smaller bump over the baseline's version than that. Every breaking
 * change is printed as one sentence with its location.
 *   --against <git-ref>   compare with the contracts (and package.json version) at a git ref instead
 *   --contracts <dir>     the contracts to check (default contracts/)
 *   --baseline <dir>      the released contracts (default <contracts>/baseline)
 *   --version <x.y.z>     the version to check instead of package.json's
 */
import { join, resolve } from 'node:path';
import { bumpBetween, bumpSatisfies, nextVersion } from './contracts/changes.js';
import { computeChangelog } from './contracts/changelog.js';
import { baselineContracts, gitContracts, option, ROOT, workingContracts } from './contracts/contract-sets.js';

const argv = process.argv.slice(2);
const contractsDir = resolve(option(argv, '--contracts') ?? join(ROOT, 'contracts'));
const baselineDir = resolve(option(argv, '--baseline') ?? join(contractsDir, 'baseline'));
const ref = option(argv, '--against');

const released = ref ? gitContracts(ref) : baselineContracts(baselineDir);
const current = workingContracts(contractsDir, option(argv, '--version'));
const changelog = computeChangelog(released, current);
console.log(`Breaking-change check of ${current.label} against ${released.label}`);
const breaking = changelog.changes.filter((change) => change.severity === 'breaking');
for (const change of breaking) {
  const rules = change.rules ? ` [${change.rules.join(', ')}]` : '';
  console.log(`BREAKING ${change.file}, ${change.subject}: ${change.change}.${rules}\n  client: ${change.action}.`);
}
console.log(breaking.length === 0 ? 'No breaking changes.' : `${breaking.length} breaking change(s).`);
const { counts } = changelog;
console.log(
  `Changes since ${released.version ?? 'the release'}: ${counts.breaking} breaking, ${counts.dangerous} dangerous, ${counts.additive} additive, ${counts.documentation} documentation-only → required version bump: ${changelog.requiredBump}.`,
);

function fail(message: string): never {
  console.error(`\n${message}\nSee the changes with \`npm run contracts:changelog\` (docs/contracts.md, "Changelog and versioning").`);
  process.exit(1);
}

const version = current.version!;
if (released.version === undefined) {
  // A baseline that records no version cannot be compared; a break still needs a deliberate release.
  if (breaking.length > 0) fail(`${released.label} records no version; release breaking changes deliberately with \`npm run contracts:release\`.`);
  console.log(`${released.label} records no version: only breaking changes are checked.`);
} else {
  let bump;
  try {
    bump = bumpBetween(released.version, version);
  } catch (error) {
    fail(`package.json's version: ${(error as Error).message}.`);
  }
  if (!bumpSatisfies(bump, changelog.requiredBump)) {
    fail(
      `The version ${version} is ${bump === 'none' ? 'no' : `a ${bump}`} bump over the released ${released.version}, but the contract changes require a ${changelog.requiredBump} bump: ` +
        `set "version" in package.json to at least ${nextVersion(released.version, changelog.requiredBump)}${breaking.length > 0 ? ' (a breaking release: agree it with the client teams first), or undo the breaking changes' : ''}.`,
    );
  }
  console.log(`Version ${version} over the released ${released.version}: ${bump === 'none' ? 'no' : `a ${bump}`} bump, enough for ${changelog.requiredBump}.`);
}
