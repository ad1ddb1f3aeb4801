import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { sha256 } from '../../src/http/contract-documents.js';
import { buildServer, type CompiledServer } from './compiled-server.js';
import { pgliteTemplatePath, ROOT } from '../support/template.js';
import { budget } from '../support/budget.js';

/**
 * Start-up work the built server no longer does (issue 11 item 1, docs/architecture.md): parse the
 * OpenAPI YAML and compile the OpenAPI meta-schema (the build wrote each document as JSON), or load
 * the PostgreSQL driver when it runs on PGlite. Checked on a real build, in child processes, by which
 * packages they load.
 */
let built: CompiledServer;
let dist: string;

beforeAll(async () => {
  built = await buildServer();
  dist = join(built.main, '../..');
}, budget(20_000));
afterAll(() => built?.remove());

/** Runs an ES module script in a fresh node and answers what it printed as JSON. */
async function run(script: string): Promise<unknown> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, env: { PATH: process.env.PATH ?? '' } });
  return JSON.parse(stdout);
}

/** Script lines answering whether a package was loaded (everything here is CommonJS, so it is in require.cache). */
const LOADED = `
  import { createRequire } from 'node:module';
  const loaded = (name) => Object.keys(createRequire(import.meta.url).cache).some((file) => file.includes('/node_modules/' + name + '/'));`;

test(
  'the build writes every OpenAPI document as JSON with its hash, and the built server reads those without loading a YAML parser',
  async () => {
    for (const name of ['publishing', 'users', 'webhooks']) {
      const text = readFileSync(join(ROOT, `contracts/openapi/${name}.yaml`), 'utf8');
      const entry = JSON.parse(readFileSync(join(dist, `prebuilt/openapi/${name}.json`), 'utf8')) as { sha256: string; document: unknown };
      expect(entry.sha256).toBe(sha256(text));
      expect(entry.document).toEqual(parseYaml(text));
    }
    // The compiled loader, from its place in dist/, finds the build's JSON on its own.
    const script = `${LOADED}
    const { loadContractDocuments } = await import(${JSON.stringify(join(dist, 'src/http/contract-documents.js'))});
    const sources = loadContractDocuments().map((loaded) => loaded.source);
    console.log(JSON.stringify({ sources, yaml: loaded('yaml') }));`;
    expect(await run(script)).toEqual({ sources: ['prebuilt', 'prebuilt', 'prebuilt'], yaml: false });
  },
  budget(10_000),
);

test(
  'the embedded store opens without loading the PostgreSQL driver',
  async () => {
    const script = `${LOADED}
    import { readFileSync } from 'node:fs';
    const { openDatabase } = await import(${JSON.stringify(join(dist, 'src/store/database.js'))});
    const db = await openDatabase({ dataDir: 'memory://', loadDataDir: new Blob([readFileSync(${JSON.stringify(pgliteTemplatePath())})]) });
    const { rows } = await db.knex.raw('select count(*) as n from knex_migrations');
    await db.close();
    console.log(JSON.stringify({ kind: db.kind, migrated: rows[0].n > 0, pg: loaded('pg'), knex: loaded('knex') }));`;
    expect(await run(script)).toEqual({ kind: 'pglite', migrated: true, pg: false, knex: true });
  },
  budget(10_000),
);
