/**
 * The contracts as sets of documents — the released baseline, a working tree, or a git ref — with the
 * package version each was released at: what scripts/contracts/changelog.ts compares, for
 * `npm run contracts:changelog`, `npm run breaking` and `npm run contracts:release`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

export const ROOT = new URL('../../', import.meta.url).pathname;
export const BUF = join(ROOT, 'node_modules/.bin/buf');

/** One released or current set of contracts: document texts by file name, and what buf compares against. */
export interface ContractSet {
  label: string;
  openapi: Map<string, string>;
  graphql: Map<string, string>;
  /** A buf input (image file, module directory or `.git#ref=…`); undefined when the set has no protos. */
  proto?: string;
  /** The package version the set was released at (baseline, git ref) or is about to be (working tree). */
  version?: string;
}

/** The file a baseline records its version in: `{ "version": "2.0.0" }`, written by `npm run contracts:release`. */
export const RELEASE_FILE = 'release.json';

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

/** The version in the package.json of the repository (the one beside ROOT's contracts). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The contracts of a working tree: `<dir>/openapi/*.yaml`, `<dir>/graphql/*.graphql`, `<dir>/proto`; `version` defaults to package.json's. */
export function workingContracts(contractsDir: string, version = packageVersion()): ContractSet {
  return {
    label: shown(contractsDir),
    openapi: filesIn(join(contractsDir, 'openapi'), '.yaml'),
    graphql: filesIn(join(contractsDir, 'graphql'), '.graphql'),
    proto: existsSync(join(contractsDir, 'proto')) ? join(contractsDir, 'proto') : undefined,
    version,
  };
}

/**
 * The version a baseline was released at: its release.json; a baseline written before release.json
 * existed names it only in its README ("at package version 2.0.0").
 */
export function baselineVersion(baselineDir: string): string | undefined {
  const record = join(baselineDir, RELEASE_FILE);
  if (existsSync(record)) return (JSON.parse(readFileSync(record, 'utf8')) as { version?: string }).version;
  const readme = join(baselineDir, 'README.md');
  if (!existsSync(readme)) return undefined;
  return /at package version (\d+\.\d+\.\d+)/.exec(readFileSync(readme, 'utf8'))?.[1];
}

/** The last released contracts, as `npm run contracts:release` wrote them. */
export function baselineContracts(baselineDir: string): ContractSet {
  const image = join(baselineDir, 'proto.binpb');
  return {
    label: `the baseline ${shown(baselineDir)}`,
    openapi: filesIn(join(baselineDir, 'openapi'), '.yaml'),
    graphql: filesIn(join(baselineDir, 'graphql'), '.graphql'),
    proto: existsSync(image) ? image : undefined,
    version: baselineVersion(baselineDir),
  };
}

/** The set's protos as a buf image (descriptor set with source info): the baseline's file, or `buf build` of a directory or git ref. */
export function protoImage(set: ContractSet): Uint8Array | undefined {
  if (!set.proto) return undefined;
  if (set.proto.endsWith('.binpb')) return readFileSync(set.proto);
  const dir = mkdtempSync(join(tmpdir(), 'contracts-image-'));
  try {
    const image = join(dir, 'image.binpb');
    const run = spawnSync(BUF, ['build', set.proto.startsWith(ROOT) ? relative(ROOT, set.proto) : set.proto, '-o', image], { cwd: ROOT, encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`buf build ${set.proto} failed (exit ${String(run.status)}): ${run.stderr || run.stdout}`);
    return readFileSync(image);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
  // buf clones the repository and checks out a ref by name: give it the commit (`main~1` is no name).
  const commit = git('rev-parse', '--verify', `${ref}^{commit}`).trim();
  const hasTree = (folder: string) => spawnSync('git', ['cat-file', '-e', `${ref}:contracts/${folder}`], { cwd: ROOT }).status === 0;
  let version: string | undefined;
  try {
    version = (JSON.parse(git('show', `${ref}:package.json`)) as { version?: string }).version;
  } catch {
    version = undefined;
  }
  return {
    label: `git ${ref}`,
    openapi: hasTree('openapi') ? read('openapi', '.yaml') : new Map(),
    graphql: hasTree('graphql') ? read('graphql', '.graphql') : new Map(),
    proto: hasTree('proto') ? `${ROOT}.git#ref=${commit},subdir=contracts/proto` : undefined,
    version,
  };
}

/** Reads `--name value` from argv. */
export function option(argv: string[], name: string): string | undefined {
  const index = argv.indexOf(name);
  if (index === -1) return undefined;
  const value = argv[index + 1];
  if (value === undefined || value.startsWith('--')) throw new Error(`${name} needs a value`);
  return value;
}
