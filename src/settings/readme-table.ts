import { SETTINGS } from './table.js';

/** The heading README's full table sits under; the table is the first one after it. */
const SECTION = '## Configuration';

const cell = (markdown: string): string => markdown.replaceAll('|', '\\|');

/** README's configuration table, rendered from the settings table: one row per variable, in its order. */
export function renderSettingsTable(): string {
  const rows = Object.values(SETTINGS).map(
    (setting) => `| \`${setting.env}\` | ${cell(setting.defaultCell)} | ${cell(setting.allowed)} | ${cell(setting.doc)} |`,
  );
  return ['| Variable | Default | Accepts | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** Where the table under "## Configuration" starts and ends in `readme` (its lines that begin with `|`). */
function tableBounds(readme: string): { start: number; end: number } {
  const section = readme.indexOf(`\n${SECTION}\n`);
  if (section === -1) throw new Error(`README.md has no "${SECTION}" section`);
  const start = readme.indexOf('\n|', section) + 1;
  if (start === 0) throw new Error(`README.md's "${SECTION}" section has no table`);
  let end = start;
  while (end < readme.length && readme[end] === '|') {
    const lineEnd = readme.indexOf('\n', end);
    end = lineEnd === -1 ? readme.length : lineEnd + 1;
  }
  return { start, end };
}

/** The configuration table as README.md has it. */
export function readmeSettingsTable(readme: string): string {
  const { start, end } = tableBounds(readme);
  return readme.slice(start, end).trimEnd();
}

/** README.md with its configuration table replaced by the rendering. */
export function withRenderedSettingsTable(readme: string): string {
  const { start, end } = tableBounds(readme);
  return `${readme.slice(0, start)}${renderSettingsTable()}\n${readme.slice(end)}`;
}
