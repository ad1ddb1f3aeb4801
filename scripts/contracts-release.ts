/**
 * `npm run contracts:release`: moves the baseline forward, deliberately. Rewrites contracts/baseline
 * from the current contracts (OpenAPI and GraphQL copies, a buf module image of contracts/proto) and
 * prints what changed since the previous release, breaking changes included.
 *   --contracts <dir>  the contracts to release (default contracts/)
 *   --baseline <dir>   where the release goes (default <contracts>/baseline)
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { baselineContracts, BUF, compareContracts, option, ROOT, workingContracts } from './contracts/contract-sets.js';

const argv = process.argv.slice(2);
const contractsDir = resolve(option(argv, '--contracts') ?? join(ROOT, 'contracts'));
const baselineDir = resolve(option(argv, '--baseline') ?? join(contractsDir, 'baseline'));

const current = workingContracts(contractsDir);
const previous = baselineContracts(baselineDir);
const reports = await compareContracts(previous, current);

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
const before = existsSync(image) ? readFileSync(image) : undefined;
if (current.proto) {
  // A module image (not the workspace): `buf breaking contracts/proto --against <image>` compares like with like.
  execFileSync(BUF, ['build', current.proto.startsWith(ROOT) ? relative(ROOT, current.proto) : current.proto, '-o', image], { cwd: ROOT, stdio: 'inherit' });
} else {
  rmSync(image, { force: true });
}
const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
writeFileSync(
  join(baselineDir, 'README.md'),
  `# Released contracts (baseline)\n\nWritten by \`npm run contracts:release\` at package version ${version}; never edit by hand.\n` +
    '`npm run breaking` compares contracts/ with these files: openapi/*.yaml, graphql/*.graphql and\n' +
    'proto.binpb (`buf build contracts/proto`, a module image). See docs/contracts.md.\n',
);

console.log(`Released ${relative(ROOT, contractsDir) || contractsDir} into ${relative(ROOT, baselineDir) || baselineDir}:`);
for (const report of reports) {
  let status: string = report.status;
  if (report.kind === 'proto' && report.status === 'changed') status = before && readFileSync(image).equals(before) ? 'unchanged' : 'changed';
  console.log(
    `  ${report.kind.padEnd(7)} ${report.name}: ${status}${report.breaks.length > 0 ? `, ${report.breaks.length} breaking change(s) released:` : ''}`,
  );
  for (const sentence of report.breaks) console.log(`    - ${sentence}`);
}
