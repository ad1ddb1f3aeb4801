import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { budget } from '../support/budget.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);

interface LockEntry {
  version?: string;
  optional?: boolean;
  os?: string[];
  cpu?: string[];
  optionalDependencies?: Record<string, string>;
}
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  license: string;
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
// npm's own environment from the jest script would leak into the child npm.
const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('npm_') && key !== 'NODE_OPTIONS'));

describe('install from the committed lockfile', () => {
  it('records every optional platform build, with its os and cpu, as npm ci requires', () => {
    const missing: string[] = [];
    for (const [location, entry] of Object.entries(lock.packages)) {
      for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
        const found = lock.packages[`${location}/node_modules/${name}`] ?? lock.packages[`node_modules/${name}`];
        if (!found) missing.push(`${name}@${version} (of ${location || 'the root'})`);
        // A platform build without os/cpu would be fetched (and fail) on every other platform.
        else if (/-(darwin|linux|win32|android|freebsd)-/.test(name) && (found.os === undefined || found.cpu === undefined || !found.optional))
          missing.push(`${name}: ${JSON.stringify(found)}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it(
    'is accepted by npm ci (dry run in a scratch copy, from the local cache)',
    async () => {
      const scratch = mkdtempSync(join(tmpdir(), 'cfs-npm-ci-'));
      try {
        for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(ROOT, file), join(scratch, file));
        const result = await run('npm', ['ci', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: scratch, env }).then(
          () => 'accepted',
          (error: { stderr?: string }) =>
            (error.stderr ?? '')
              .split('\n')
              .filter((line) => /npm error (code|Missing)/.test(line))
              .join('\n'),
        );
        expect(result).toBe('accepted');
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    },
    budget(20_000),
  );
});

describe('package.json', () => {
  it('starts the compiled server, built on install, with no TypeScript tooling at run time', () => {
    expect(manifest.scripts.start).toBe('node dist/src/main.js');
    expect(manifest.scripts.prepare).toBe('npm run build');
    for (const tool of ['tsx', 'typescript', '@swc/core', 'pino-pretty']) {
      expect(manifest.dependencies[tool]).toBeUndefined();
      expect(manifest.devDependencies[tool]).toBeDefined();
    }
  });

  it('is MIT licensed, with the license text at the root', () => {
    expect(manifest.license).toBe('MIT');
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n/);
  });
});
