import { execFileSync } from 'node:child_process';

/**
 * Prepares the migrated template database once per run, in a child process (jest loads global
 * setup outside its ESM transform, and the store is TypeScript).
 */
export default function globalSetup() {
  const output = execFileSync(process.execPath, ['--import', 'tsx', 'test/support/prepare-template.ts'], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (process.env.DATABASE_URL) process.env.TEST_TEMPLATE_DB = output.trim();
}
