/**
 * `npm run test:contract [name…]`: dredd against the real server, for every contracts/openapi/*.yaml
 * (or the names given).
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
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../src/config.js';
import { build } from '../src/server/build.js';

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

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** An empty database for one contract run, and how to remove it. */
async function freshStore(): Promise<{ env: Record<string, string>; remove(): Promise<void> }> {
  const url = process.env.DATABASE_URL;
  if (url) {
    const name = `cfs_contract_${randomBytes(6).toString('hex')}`;
    await adminQuery(url, `CREATE DATABASE ${name}`);
    const dbUrl = new URL(url);
    dbUrl.pathname = `/${name}`;
    return { env: { DATABASE_URL: dbUrl.toString() }, remove: () => adminQuery(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
  }
  const dir = mkdtempSync(join(tmpdir(), 'cfs-contract-'));
  return { env: { DATABASE_URL: '', DATA_DIR: dir }, remove: async () => rmSync(dir, { recursive: true, force: true }) };
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
  const store = await freshStore();
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
      const code = await runDredd(args, { ...process.env, NODE_NO_WARNINGS: '1', DREDD_SERVER_URL: url, DREDD_RESULTS_FILE: resultsFile, DREDD_CONTRACT: contract });
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
    return { contract, ok, lines };
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
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((name) => !all.includes(name));
  if (unknown.length > 0) throw new Error(`unknown contract(s): ${unknown.join(', ')}; known: ${all.join(', ')}`);
  const outcomes: Outcome[] = [];
  for (const contract of wanted.length > 0 ? wanted : all) outcomes.push(await runContract(contract));
  console.log('\n=== contract test summary');
  for (const outcome of outcomes) {
    console.log(`${outcome.ok ? 'PASS' : 'FAIL'} ${outcome.contract}: ${outcome.lines[0] ?? ''}`);
    for (const line of outcome.lines.slice(1)) console.log(`     ${line}`);
  }
  process.exitCode = outcomes.every((outcome) => outcome.ok) ? 0 : 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
