/**
 * `npm run test:contract [name…]`: every contract test against live servers — dredd for every
 * contracts/openapi/*.yaml, then the gRPC contract tests (a @grpc/grpc-js client over every RPC the
 * server serves, scripts/grpc-client-contract.ts, and `buf curl`, scripts/grpc-contract-test.ts), then
 * fuzzing of every OpenAPI operation (scripts/fuzz-contract.ts). Names narrow the run: OpenAPI
 * contract names (dredd and fuzzing of those), `grpc` (both gRPC tests), `fuzz` (fuzzing only).
 * It ends with the count of operations exercised and fails if any operation was not.
 *
 * Each contract gets its own server over its own empty database (a fresh PGlite data directory, or a
 * fresh database on DATABASE_URL's server, dropped afterwards), so a hooks file may assume a clean
 * slate and the contracts cannot disturb each other. The server listens on 127.0.0.1:0 and its URL
 * reaches the hooks as env DREDD_SERVER_URL. Extra server environment for one contract (e.g. a first
 * superuser) goes in `test/contract/hooks/<name>.env.json`; sign-in throttling is lowered to
 * SIGNIN_MAX_FAILURES=3 so a hook can make a 429 real quickly.
 *
 * Dredd runs with test/contract/runner-hooks.cjs (charset normalisation, result recording) and
 * `test/contract/hooks/<name>.cjs` when it exists. The run fails when dredd fails, when any
 * transaction fails, or when a documented response was not exercised (no passing transaction);
 * responses a hooks file deliberately skipped are listed, and fail the run too unless
 * CONTRACT_ALLOW_SKIPS=1.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../src/config.js';
import { build } from '../src/server/build.js';
import { runGrpcClientContract } from './grpc-client-contract.js';
import { runGrpcContract } from './grpc-contract-test.js';
import { runFuzzContract } from './fuzz-contract.js';
import { freshStore } from './support/fresh-store.js';

const ROOT = new URL('../', import.meta.url).pathname;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];

interface Result {
  name: string;
  method: string;
  path: string;
  status: string;
  result: 'pass' | 'fail' | 'skip' | 'unknown';
}

interface Outcome {
  contract: string;
  ok: boolean;
  lines: string[];
  /** Documented `METHOD path status` responses, and those a passing dredd transaction exercised. */
  responses?: number;
  responsesPassed?: number;
  /** Operations of the document, and those every documented response of which passed. */
  operations?: number;
  operationsExercised?: number;
}

/** Every `METHOD path status` the document promises. */
function documentedResponses(file: string): string[] {
  const document = parseYaml(readFileSync(file, 'utf8')) as { paths?: Record<string, Record<string, { responses?: Record<string, unknown> }>> };
  const keys: string[] = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      for (const status of Object.keys(item[method]?.responses ?? {})) {
        if (/^\d{3}$/.test(status)) keys.push(`${method.toUpperCase()} ${path} ${status}`);
      }
    }
  }
  return keys;
}

function runDredd(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(ROOT, 'node_modules/.bin/dredd'), args, { cwd: ROOT, env, stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function runContract(contract: string): Promise<Outcome> {
  const yaml = join(ROOT, 'contracts/openapi', `${contract}.yaml`);
  const hooksFile = join(ROOT, 'test/contract/hooks', `${contract}.cjs`);
  const envFile = join(ROOT, 'test/contract/hooks', `${contract}.env.json`);
  const extraEnv = existsSync(envFile) ? (JSON.parse(readFileSync(envFile, 'utf8')) as Record<string, string>) : {};
  const store = await freshStore('contract');
  const scratch = mkdtempSync(join(tmpdir(), 'cfs-dredd-'));
  const resultsFile = join(scratch, 'results.json');
  const lines: string[] = [];
  try {
    const config = loadConfig({
      ...process.env,
      LOG_LEVEL: process.env.CONTRACT_LOG_LEVEL ?? 'warn',
      SIGNIN_MAX_FAILURES: '3',
      MIGRATE: 'true',
      ...store.env,
      ...extraEnv,
    });
    const app = await build(config);
    try {
      const port = await app.listen(0, '127.0.0.1');
      const url = `http://127.0.0.1:${port}`;
      const args = [yaml, url, `--hookfiles=${join(ROOT, 'test/contract/runner-hooks.cjs')}`];
      if (existsSync(hooksFile)) args.push(`--hookfiles=${hooksFile}`);
      else lines.push(`no hooks file (${hooksFile}): only the documents' examples are exercised`);
      args.push('--language=nodejs', '--loglevel=warning');
      console.log(`\n=== ${contract}: dredd against ${url}`);
      const code = await runDredd(args, {
        ...process.env,
        NODE_NO_WARNINGS: '1',
        DREDD_SERVER_URL: url,
        DREDD_RESULTS_FILE: resultsFile,
        DREDD_CONTRACT: contract,
      });
      if (code !== 0) lines.push(`dredd exited with ${code}`);
    } finally {
      await app.close();
    }
    if (!existsSync(resultsFile)) {
      lines.unshift('no results: dredd stopped before running its transactions (see its errors above)');
      return { contract, ok: false, lines };
    }
    const results = JSON.parse(readFileSync(resultsFile, 'utf8')) as Result[];
    const count = (result: Result['result']) => results.filter((entry) => entry.result === result).length;
    const failed = results.filter((entry) => entry.result === 'fail' || entry.result === 'unknown');
    const skipped = results.filter((entry) => entry.result === 'skip');
    const passedKeys = new Set(results.filter((entry) => entry.result === 'pass').map((entry) => `${entry.method} ${entry.path} ${entry.status}`));
    const missing = documentedResponses(yaml).filter((key) => !passedKeys.has(key));
    lines.unshift(`${results.length} transactions: ${count('pass')} passed, ${failed.length} failed, ${skipped.length} skipped`);
    for (const entry of failed) lines.push(`failed: ${entry.name}`);
    for (const entry of skipped) lines.push(`skipped: ${entry.name}`);
    for (const key of missing) lines.push(`not exercised: ${key}`);
    const allowSkips = process.env.CONTRACT_ALLOW_SKIPS === '1';
    const unexercised = allowSkips ? missing.filter((key) => !skipped.some((entry) => `${entry.method} ${entry.path} ${entry.status}` === key)) : missing;
    const ok = lines.every((line) => !line.startsWith('dredd exited')) && failed.length === 0 && unexercised.length === 0;
    const documented = documentedResponses(yaml);
    const operationOf = (key: string) => key.split(' ').slice(0, 2).join(' ');
    const operations = new Set(documented.map(operationOf));
    const exercised = [...operations].filter((operation) => !missing.some((key) => operationOf(key) === operation));
    return {
      contract,
      ok,
      lines,
      responses: documented.length,
      responsesPassed: documented.length - missing.length,
      operations: operations.size,
      operationsExercised: exercised.length,
    };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    await store.remove();
  }
}

async function main(): Promise<void> {
  const all = readdirSync(join(ROOT, 'contracts/openapi'))
    .filter((file) => file.endsWith('.yaml'))
    .map((file) => file.replace(/\.yaml$/, ''))
    .sort();
  const args = process.argv.slice(2);
  const unknown = args.filter((name) => !all.includes(name) && name !== 'grpc' && name !== 'fuzz');
  if (unknown.length > 0) throw new Error(`unknown contract(s): ${unknown.join(', ')}; known: ${all.join(', ')}, grpc, fuzz`);
  const everything = args.length === 0;
  const named = args.filter((name) => all.includes(name));
  const openapi = everything ? all : named;
  const dredd = args.includes('fuzz') && named.length === 0 ? [] : openapi;
  const fuzz = everything || args.includes('fuzz') || named.length > 0 ? (named.length > 0 ? named : all) : [];
  const outcomes: Outcome[] = [];
  for (const contract of dredd) outcomes.push(await runContract(contract));
  let grpcCount: { rpcs: number; exercised: number } | undefined;
  if (everything || args.includes('grpc')) {
    const client = await runGrpcClientContract();
    grpcCount = { rpcs: client.rpcs, exercised: client.exercised };
    outcomes.push(client);
    outcomes.push(await runGrpcContract());
  }
  let fuzzCount: { operations: number; fuzzed: number; requests: number } | undefined;
  if (fuzz.length > 0) {
    const fuzzed = await runFuzzContract(fuzz);
    fuzzCount = { operations: fuzzed.operations, fuzzed: fuzzed.fuzzed, requests: fuzzed.requests };
    outcomes.push(fuzzed);
  }
  console.log('\n=== contract test summary');
  for (const outcome of outcomes) {
    console.log(`${outcome.ok ? 'PASS' : 'FAIL'} ${outcome.contract}: ${outcome.lines[0] ?? ''}`);
    for (const line of outcome.lines.slice(1)) console.log(`     ${line}`);
  }
  const dreddOutcomes = outcomes.slice(0, dredd.length);
  const sum = (pick: (outcome: Outcome) => number | undefined) => dreddOutcomes.reduce((total, outcome) => total + (pick(outcome) ?? 0), 0);
  const parts: string[] = [];
  let exercised = 0;
  let total = 0;
  if (dredd.length > 0) {
    parts.push(
      `OpenAPI (dredd): ${sum((o) => o.operationsExercised)}/${sum((o) => o.operations)} operations, ${sum((o) => o.responsesPassed)}/${sum((o) => o.responses)} documented responses`,
    );
    exercised += sum((o) => o.operationsExercised);
    total += sum((o) => o.operations);
  }
  if (grpcCount) {
    parts.push(`RPC (gRPC, Connect JSON/binary, gRPC-Web): ${grpcCount.exercised}/${grpcCount.rpcs} RPCs`);
    exercised += grpcCount.exercised;
    total += grpcCount.rpcs;
  }
  if (fuzzCount) {
    parts.push(`fuzz: ${fuzzCount.fuzzed}/${fuzzCount.operations} OpenAPI operations (${fuzzCount.requests} requests)`);
    exercised += fuzzCount.fuzzed;
    total += fuzzCount.operations;
  }
  const ok = outcomes.every((outcome) => outcome.ok) && exercised === total;
  console.log(`\n${ok ? 'PASS' : 'FAIL'} operations exercised: ${exercised}/${total} — ${parts.join('; ')}`);
  process.exitCode = ok ? 0 : 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
