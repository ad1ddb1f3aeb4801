/**
 * `npm run lint:contracts`: every contract is linted offline before it reaches a client team.
 *   protobuf: buf lint (STANDARD, named exceptions in buf.yaml) and buf format --diff
 *   OpenAPI:  Redocly's recommended rules (@redocly/openapi-core, no network) for every contracts/openapi/*.yaml
 *   GraphQL:  the SDL builds and validates as a schema
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConfig, lint } from '@redocly/openapi-core';
import { buildSchema, validateSchema } from 'graphql';

const ROOT = new URL('../', import.meta.url).pathname;
const BUF = join(ROOT, 'node_modules/.bin/buf');
let failed = false;

function step(name: string, run: () => void | Promise<void>) {
  return Promise.resolve()
    .then(run)
    .then(
      () => console.log(`ok    ${name}`),
      (error: unknown) => {
        failed = true;
        const output = (error as { stdout?: Buffer }).stdout?.toString() || (error instanceof Error ? error.message : String(error));
        console.error(`FAIL  ${name}\n${output}`);
      },
    );
}

await step('buf lint', () => {
  execFileSync(BUF, ['lint'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
});
await step('buf format', () => {
  execFileSync(BUF, ['format', '--diff', '--exit-code'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
});

const config = await createConfig({
  extends: ['recommended'],
  rules: {
    // Security is declared per operation; public endpoints say `security: []` on purpose.
    'security-defined': 'error',
    // Local servers only: the contracts describe a server that runs anywhere.
    'no-server-example.com': 'off',
    'info-license': 'off',
    'info-license-url': 'off',
  },
});
for (const file of readdirSync(join(ROOT, 'contracts/openapi'))
  .filter((name) => name.endsWith('.yaml'))
  .sort()) {
  await step(`openapi lint ${file}`, async () => {
    const problems = await lint({ ref: join(ROOT, 'contracts/openapi', file), config });
    const errors = problems.filter((problem) => problem.severity === 'error');
    const warnings = problems.filter((problem) => problem.severity === 'warn');
    for (const problem of [...errors, ...warnings]) {
      const where = problem.location[0]?.pointer ?? '';
      console.log(`      ${problem.severity} ${problem.ruleId}: ${problem.message} (${where})`);
    }
    if (errors.length > 0) throw new Error(`${errors.length} error(s)`);
  });
}

const graphqlDir = join(ROOT, 'contracts/graphql');
if (existsSync(graphqlDir)) {
  for (const file of readdirSync(graphqlDir)
    .filter((name) => name.endsWith('.graphql'))
    .sort()) {
    await step(`graphql schema ${file}`, () => {
      const errors = validateSchema(buildSchema(readFileSync(join(graphqlDir, file), 'utf8')));
      if (errors.length > 0) throw new Error(errors.map((error) => error.message).join('\n'));
    });
  }
}

if (failed) process.exit(1);
