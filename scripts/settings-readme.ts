/**
 * `npm run docs:settings`: rewrites README.md's configuration table from the settings table
 * (src/settings/table.ts). `-- --check` only compares, and exits 1 when README.md differs
 * (test/settings/readme-table.test.ts checks the same in `npm test`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { readmeSettingsTable, renderSettingsTable, withRenderedSettingsTable } from '../src/settings/readme-table.js';

const README = new URL('../README.md', import.meta.url).pathname;
const readme = readFileSync(README, 'utf8');
if (process.argv.includes('--check')) {
  const same = readmeSettingsTable(readme) === renderSettingsTable();
  process.stdout.write(
    same ? 'README.md: the configuration table matches src/settings/table.ts\n' : 'README.md: the configuration table differs; run npm run docs:settings\n',
  );
  process.exitCode = same ? 0 : 1;
} else {
  writeFileSync(README, withRenderedSettingsTable(readme));
  process.stdout.write('README.md: the configuration table is rendered from src/settings/table.ts\n');
}
