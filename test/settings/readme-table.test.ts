import { readFileSync } from 'node:fs';
import { readmeSettingsTable, renderSettingsTable, withRenderedSettingsTable } from '../../src/settings/readme-table.js';
import { SETTINGS } from '../../src/settings/table.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe("README.md's configuration table", () => {
  test('is the rendering of src/settings/table.ts (npm run docs:settings writes it)', () => {
    const written = readmeSettingsTable(README);
    const expected = renderSettingsTable();
    if (written !== expected) {
      throw new Error(`README.md's table under "## Configuration" differs from src/settings/table.ts; run npm run docs:settings. Expected:\n\n${expected}\n`);
    }
  });

  test('lists every variable once, in the order of the table', () => {
    const named = [...readmeSettingsTable(README).matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((match) => match[1]);
    expect(named).toEqual(Object.values(SETTINGS).map((setting) => setting.env));
  });

  test('rewriting it replaces the table only', () => {
    const stale = README.replace('| `HOST` | `0.0.0.0` |', '| `HOST` | `::` |');
    expect(stale).not.toBe(README);
    expect(withRenderedSettingsTable(stale)).toBe(withRenderedSettingsTable(README));
    expect(readmeSettingsTable(withRenderedSettingsTable(stale))).toBe(renderSettingsTable());
  });

  test('"Settings you will set" names declared variables with their declared defaults', () => {
    const section = README.slice(README.indexOf('## Settings you will set'), README.indexOf('\n## ', README.indexOf('## Settings you will set') + 1));
    const rows = [...section.matchAll(/^\| (`[A-Z0-9_]+`(?:, `[A-Z0-9_]+`)*) \| ([^|]+) \|/gm)];
    expect(rows.length).toBeGreaterThan(3);
    const byEnv = new Map(Object.values(SETTINGS).map((setting) => [setting.env, setting]));
    for (const [, names, defaultCell] of rows) {
      const envs = [...names!.matchAll(/`([A-Z0-9_]+)`/g)].map((match) => match[1]!);
      for (const env of envs) expect({ env, declared: byEnv.has(env) }).toEqual({ env, declared: true });
      expect({ names, default: defaultCell!.trim() }).toEqual({ names, default: [...new Set(envs.map((env) => byEnv.get(env)?.defaultCell))].join(', ') });
    }
  });
});
