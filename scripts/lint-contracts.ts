/**
 * `npm run lint:contracts`: every contract is linted offline before it reaches a client team.
 *   protobuf: buf lint (STANDARD, named exceptions in buf.yaml) and buf format --diff
 *   OpenAPI:  Redocly's recommended rules (@redocly/openapi-core, no network) and Spectral's OWASP API
 *             Security ruleset (@stoplight/spectral-owasp-ruleset, offline) for every contracts/openapi/*.yaml;
 *             any finding (warnings included) not listed in contracts/openapi-lint-exceptions.yaml fails
 *   GraphQL:  the SDL builds and validates as a schema
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConfig, lint } from '@redocly/openapi-core';
import spectralCore from '@stoplight/spectral-core';
import spectralParsers from '@stoplight/spectral-parsers';
import owaspRuleset from '@stoplight/spectral-owasp-ruleset';
import { buildSchema, validateSchema } from 'graphql';
import { parse as parseYaml } from 'yaml';

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

/** One deliberate exception of contracts/openapi-lint-exceptions.yaml. */
interface LintException {
  rule: string | string[];
  reason: string;
  /** `file.yaml` or `file.yaml#/json/pointer`; absent: everywhere. */
  where?: string[];
}

const exceptionsFile = join(ROOT, 'contracts/openapi-lint-exceptions.yaml');
const exceptions = (parseYaml(readFileSync(exceptionsFile, 'utf8')) as { exceptions: LintException[] }).exceptions;
for (const exception of exceptions) {
  if (!exception.reason?.trim()) throw new Error(`${exceptionsFile}: every exception needs a reason (${JSON.stringify(exception.rule)})`);
}
const used = new Set<LintException>();

/** The JSON pointer of a Spectral result path (RFC 6901 escaping). */
function pointerOf(path: readonly (string | number)[]): string {
  return path.map((segment) => `/${String(segment).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** The exception that covers a finding of `rule` at `pointer` in `file`, if any. */
function exceptionFor(rule: string, file: string, pointer: string): LintException | undefined {
  return exceptions.find((exception) => {
    const rules = Array.isArray(exception.rule) ? exception.rule : [exception.rule];
    if (!rules.includes(rule)) return false;
    if (!exception.where) return true;
    return exception.where.some((where) => {
      const [whereFile, wherePointer = ''] = where.split('#');
      return whereFile === file && (pointer === wherePointer || pointer.startsWith(`${wherePointer}/`) || wherePointer === '');
    });
  });
}

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
    let unlisted = 0;
    for (const problem of problems) {
      const where = (problem.location[0]?.pointer ?? '').replace(/^#/, '');
      const exception = exceptionFor(problem.ruleId, file, where);
      if (exception) {
        used.add(exception);
        continue;
      }
      unlisted++;
      console.log(`      ${problem.severity} ${problem.ruleId}: ${problem.message} (#${where})`);
    }
    // Warnings fail too: a finding is fixed or listed with its reason, never left to scroll by.
    if (unlisted > 0) throw new Error(`${unlisted} unlisted finding(s)`);
  });
}

const { Spectral, Document } = spectralCore as typeof import('@stoplight/spectral-core');
const Parsers = spectralParsers as typeof import('@stoplight/spectral-parsers');
const spectral = new Spectral();
// Every rule of the OWASP ruleset (its recommended set leaves some off), each at its own severity.
spectral.setRuleset({ extends: [[owaspRuleset as never, 'all']] } as never);
const SEVERITY = ['error', 'warn', 'info', 'hint'];
for (const file of readdirSync(join(ROOT, 'contracts/openapi'))
  .filter((name) => name.endsWith('.yaml'))
  .sort()) {
  await step(`openapi OWASP ${file}`, async () => {
    const path = join(ROOT, 'contracts/openapi', file);
    const results = await spectral.run(new Document(readFileSync(path, 'utf8'), Parsers.Yaml, path));
    const unlisted: string[] = [];
    let excepted = 0;
    for (const result of results) {
      const rule = String(result.code);
      const pointer = pointerOf(result.path);
      const exception = exceptionFor(rule, file, pointer);
      if (exception) {
        used.add(exception);
        excepted++;
        continue;
      }
      unlisted.push(`      ${SEVERITY[result.severity] ?? result.severity} ${rule}: ${result.message} (${file}:${result.range.start.line + 1} ${pointer})`);
    }
    for (const line of unlisted) console.log(line);
    console.log(`      ${results.length} finding(s), ${excepted} listed in contracts/openapi-lint-exceptions.yaml, ${unlisted.length} not`);
    if (unlisted.length > 0)
      throw new Error(`${unlisted.length} unlisted OWASP finding(s): fix them (docs/contracts.md, "OWASP lint") or list them with a reason`);
  });
}
for (const exception of exceptions) {
  // Not a failure: an exception may wait for another branch's operations, or outlive a fix.
  if (!used.has(exception)) console.log(`note  unused exception ${JSON.stringify(exception.rule)} (${(exception.where ?? ['everywhere']).join(', ')})`);
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
