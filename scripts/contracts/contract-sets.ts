/**
 * The contracts as sets of documents, and the breaking-change checks between two such sets: one
 * place for `npm run breaking` and `npm run contracts:release`.
 *   OpenAPI: scripts/contracts/openapi-breaking.ts over the parsed documents
 *   GraphQL: @graphql-inspector/core, changes of criticality BREAKING
 *   protobuf: buf breaking with the FILE rules of buf.yaml, against a buf image or a git ref
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { buildSchema } from 'graphql';
import { CriticalityLevel, diff } from '@graphql-inspector/core';
import { describeBreak, findOpenApiBreaks } from './openapi-breaking.js';

export const ROOT = new URL('../../', import.meta.url).pathname;
export const BUF = join(ROOT, 'node_modules/.bin/buf');

/** One released or current set of contracts: document texts by file name, and what buf compares against. */
export interface ContractSet {
  label: string;
  openapi: Map<string, string>;
  graphql: Map<string, string>;
  /** A buf input (image file or `.git#ref=…`); undefined when the set has no protos. */
  proto?: string;
}

/** The result for one contract: its breaking changes in sentences, or a note (new, unchanged). */
export interface ContractReport {
  kind: 'openapi' | 'graphql' | 'proto';
  name: string;
  status: 'unchanged' | 'changed' | 'new' | 'removed';
  breaks: string[];
}

/** A path as the user knows it: relative inside the repository, absolute outside. */
function shown(path: string): string {
  return path.startsWith(ROOT) ? relative(ROOT, path) || '.' : path;
}

function filesIn(dir: string, extension: string): Map<string, string> {
  const files = new Map<string, string>();
  if (!existsSync(dir)) return files;
  for (const name of readdirSync(dir).filter((file) => file.endsWith(extension)).sort()) files.set(name, readFileSync(join(dir, name), 'utf8'));
  return files;
}

/** The contracts of a working tree: `<dir>/openapi/*.yaml`, `<dir>/graphql/*.graphql`, `<dir>/proto`. */
export function workingContracts(contractsDir: string): ContractSet {
  return {
    label: shown(contractsDir),
    openapi: filesIn(join(contractsDir, 'openapi'), '.yaml'),
    graphql: filesIn(join(contractsDir, 'graphql'), '.graphql'),
    proto: existsSync(join(contractsDir, 'proto')) ? join(contractsDir, 'proto') : undefined,
  };
}

/** The last released contracts, as `npm run contracts:release` wrote them. */
export function baselineContracts(baselineDir: string): ContractSet {
  const image = join(baselineDir, 'proto.binpb');
  return {
    label: `the baseline ${shown(baselineDir)}`,
    openapi: filesIn(join(baselineDir, 'openapi'), '.yaml'),
    graphql: filesIn(join(baselineDir, 'graphql'), '.graphql'),
    proto: existsSync(image) ? image : undefined,
  };
}

/** The contracts as committed at a git ref (a branch, tag or commit); needs that history locally. */
export function gitContracts(ref: string): ContractSet {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const read = (folder: string, extension: string) => {
    const files = new Map<string, string>();
    const listing = git('ls-tree', '--name-only', `${ref}:contracts/${folder}`);
    for (const name of listing.split('\n').filter((file) => file.endsWith(extension)).sort()) files.set(name, git('show', `${ref}:contracts/${folder}/${name}`));
    return files;
  };
  git('rev-parse', '--verify', `${ref}^{commit}`);
  const hasTree = (folder: string) => spawnSync('git', ['cat-file', '-e', `${ref}:contracts/${folder}`], { cwd: ROOT }).status === 0;
  return {
    label: `git ${ref}`,
    openapi: hasTree('openapi') ? read('openapi', '.yaml') : new Map(),
    graphql: hasTree('graphql') ? read('graphql', '.graphql') : new Map(),
    proto: hasTree('proto') ? `${ROOT}.git#ref=${ref},subdir=contracts/proto` : undefined,
  };
}

/** Compares every contract of `released` with `current`; contracts new in `current` are additive. */
export async function compareContracts(released: ContractSet, current: ContractSet): Promise<ContractReport[]> {
  const reports: ContractReport[] = [];
  for (const [name, text] of released.openapi) {
    const now = current.openapi.get(name);
    if (now === undefined) {
      reports.push({ kind: 'openapi', name, status: 'removed', breaks: [`${name}: the whole document was removed.`] });
      continue;
    }
    const breaks = findOpenApiBreaks(parseYaml(text), parseYaml(now), name).map(describeBreak);
    reports.push({ kind: 'openapi', name, status: text === now ? 'unchanged' : 'changed', breaks });
  }
  for (const name of current.openapi.keys()) if (!released.openapi.has(name)) reports.push({ kind: 'openapi', name, status: 'new', breaks: [] });

  for (const [name, text] of released.graphql) {
    const now = current.graphql.get(name);
    if (now === undefined) {
      reports.push({ kind: 'graphql', name, status: 'removed', breaks: [`${name}: the whole schema was removed.`] });
      continue;
    }
    const changes = await diff(buildSchema(text), buildSchema(now));
    const breaks = changes
      .filter((change) => change.criticality.level === CriticalityLevel.Breaking)
      .map((change) => `${name}${change.path ? `, ${change.path}` : ''}: ${change.message.replace(/\.$/, '')}.`);
    reports.push({ kind: 'graphql', name, status: text === now ? 'unchanged' : 'changed', breaks });
  }
  for (const name of current.graphql.keys()) if (!released.graphql.has(name)) reports.push({ kind: 'graphql', name, status: 'new', breaks: [] });

  if (current.proto && released.proto) {
    reports.push({ kind: 'proto', name: 'buf module', status: 'changed', breaks: bufBreaking(current.proto, released.proto) });
  } else if (current.proto) {
    reports.push({ kind: 'proto', name: 'buf module', status: 'new', breaks: [] });
  } else if (released.proto) {
    reports.push({ kind: 'proto', name: 'buf module', status: 'removed', breaks: ['contracts/proto: the whole buf module was removed.'] });
  }
  return reports;
}

/** `buf breaking` (FILE rules from buf.yaml); each break as `<file>:<line>:<column>: <sentence>`. */
function bufBreaking(input: string, against: string): string[] {
  const run = spawnSync(BUF, ['breaking', input.startsWith(ROOT) ? relative(ROOT, input) : input, '--against', against], { cwd: ROOT, encoding: 'utf8' });
  if (run.status === 0) return [];
  const lines = run.stdout.split('\n').filter((line) => line.trim() !== '');
  // Exit code 100 means "breaking changes found"; anything else is a failure to run the check.
  if (run.status !== 100 || lines.length === 0) throw new Error(`buf breaking could not run (exit ${String(run.status)}): ${run.stderr || run.stdout}`);
  return lines.map((line) => {
    const match = /^(.*?):(\d+):(\d+):(.*)$/.exec(line);
    return match ? `${match[1]}:${match[2]}:${match[3]}: ${match[4]}` : line;
  });
}

/** Reads `--name value` from argv. */
export function option(argv: string[], name: string): string | undefined {
  const index = argv.indexOf(name);
  if (index === -1) return undefined;
  const value = argv[index + 1];
  if (value === undefined || value.startsWith('--')) throw new Error(`${name} needs a value`);
  return value;
}
