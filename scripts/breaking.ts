/**
 * `npm run breaking`: fails when a contract changed in a way that can break a client built against
 * the last released contracts (contracts/baseline, written by `npm run contracts:release`).
 *   --against <git-ref>   compare with the contracts at a git ref instead (needs that history)
 *   --contracts <dir>     the contracts to check (default contracts/)
 *   --baseline <dir>      the released contracts (default <contracts>/baseline)
 * Each break is printed as one sentence with its location; contracts new since the release are additive.
 */
import { join, resolve } from 'node:path';
import { baselineContracts, compareContracts, gitContracts, option, ROOT, workingContracts } from './contracts/contract-sets.js';

const argv = process.argv.slice(2);
const contractsDir = resolve(option(argv, '--contracts') ?? join(ROOT, 'contracts'));
const baselineDir = resolve(option(argv, '--baseline') ?? join(contractsDir, 'baseline'));
const ref = option(argv, '--against');

const released = ref ? gitContracts(ref) : baselineContracts(baselineDir);
const current = workingContracts(contractsDir);
const reports = await compareContracts(released, current);
console.log(`Breaking-change check of ${current.label} against ${released.label}`);
let total = 0;
for (const report of reports) {
  const title = `${report.kind.padEnd(7)} ${report.name}`;
  if (report.breaks.length === 0) {
    console.log(`ok      ${title}${report.status === 'new' ? ' (new since the release: additive)' : ''}`);
    continue;
  }
  total += report.breaks.length;
  console.log(`BREAKING ${title}: ${report.breaks.length} breaking change(s)`);
  for (const sentence of report.breaks) console.log(`  - ${sentence}`);
}
if (total > 0) {
  console.error(
    `\n${total} breaking change(s). Undo them, or release them deliberately (a new major version for client teams) with \`npm run contracts:release\`.`,
  );
  process.exit(1);
}
console.log('\nNo breaking changes.');
