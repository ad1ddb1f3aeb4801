/**
 * `npm run contracts:changelog`: every change to every contract (OpenAPI, protobuf, GraphQL) between the
 * released baseline and the working tree, or between two git refs, each classified breaking /
 * dangerous / additive / documentation-only, with the version bump the changes require. Prints
 * Markdown to paste under "## Unreleased" in CHANGELOG.md, or JSON with --json (docs/contracts.md,
 * "Changelog and versioning").
 *   --from <git-ref>     compare from the contracts at a git ref (default: the baseline)
 *   --to <git-ref>       compare to the contracts at a git ref (default: the working tree)
 *   --contracts <dir>    the working tree's contracts (default contracts/)
 *   --baseline <dir>     the released contracts (default <contracts>/baseline)
 *   --version <x.y.z>    the working tree's version (default package.json's)
 *   --json               JSON instead of Markdown
 */
import { join, resolve } from 'node:path';
import { renderMarkdown } from './contracts/changes.js';
import { computeChangelog } from './contracts/changelog.js';
import { baselineContracts, gitContracts, option, ROOT, workingContracts } from './contracts/contract-sets.js';

const argv = process.argv.slice(2);
const contractsDir = resolve(option(argv, '--contracts') ?? join(ROOT, 'contracts'));
const baselineDir = resolve(option(argv, '--baseline') ?? join(contractsDir, 'baseline'));
const fromRef = option(argv, '--from');
const toRef = option(argv, '--to');

const from = fromRef ? gitContracts(fromRef) : baselineContracts(baselineDir);
const to = toRef ? gitContracts(toRef) : workingContracts(contractsDir, option(argv, '--version'));
const changelog = computeChangelog(from, to);
process.stdout.write(argv.includes('--json') ? `${JSON.stringify(changelog, null, 2)}\n` : renderMarkdown(changelog));
