/**
 * One changelog across every contract: the OpenAPI documents (scripts/contracts/openapi-breaking.ts),
 * the GraphQL schema (graphql-js's own breaking/dangerous findings plus scripts/contracts/graphql-changes.ts)
 * and the protobuf module (descriptor sets diffed by scripts/contracts/proto-changes.ts, with
 * `buf breaking`'s findings attached to the breaking ones, and any it finds that the diff does not
 * kept as changes of their own), on the severity scale of scripts/contracts/changes.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSchema } from 'graphql';
import { parse as parseYaml } from 'yaml';
import { makeChangelog, type Changelog, type ContractChange } from './changes.js';
import { BUF, protoImage, ROOT, type ContractSet } from './contract-sets.js';
import { findGraphqlChanges } from './graphql-changes.js';
import { findOpenApiChanges } from './openapi-breaking.js';
import { findProtoChanges, readDescriptorSet } from './proto-changes.js';

/** The API's name as client teams know it: the document's `info.title`. */
function openApiTitle(text: string | undefined, fallback: string): string {
  if (text === undefined) return fallback;
  const doc = parseYaml(text) as { info?: { title?: unknown } } | null;
  return typeof doc?.info?.title === 'string' ? doc.info.title : fallback;
}

/** "The Article Publishing API over GraphQL (experimental). …" → "Article Publishing API over GraphQL". */
function graphqlTitle(text: string | undefined, fallback: string): string {
  if (text === undefined) return fallback;
  const description = buildSchema(text).description ?? '';
  const first = description.split(/[.(\n]/)[0]?.trim().replace(/^The /, '') ?? '';
  return first === '' ? fallback : first;
}

function openApiChanges(from: ContractSet, to: ContractSet): ContractChange[] {
  const changes: ContractChange[] = [];
  for (const name of new Set([...from.openapi.keys(), ...to.openapi.keys()])) {
    const [before, after] = [from.openapi.get(name), to.openapi.get(name)];
    const file = `openapi/${name}`;
    const api = openApiTitle(after ?? before, name);
    if (before === after) continue;
    if (before === undefined || after === undefined) {
      changes.push(
        before === undefined
          ? { severity: 'additive', kind: 'openapi', file, api, subject: name, change: 'the document was added', action: 'nothing to do; generate a client from it to use it' }
          : { severity: 'breaking', kind: 'openapi', file, api, subject: name, change: 'the document was removed', action: 'stop calling its operations' },
      );
      continue;
    }
    for (const change of findOpenApiChanges(parseYaml(before), parseYaml(after), name)) {
      let subject = change.location.startsWith(`${name}, `) ? change.location.slice(name.length + 2) : 'the document';
      let message = change.message;
      const path = /^the path (\S+) (.*)$/.exec(message);
      if (subject === 'the document' && path) [subject, message] = [path[1]!, `the path ${path[2]!} (every operation on it)`];
      changes.push({ severity: change.severity, kind: 'openapi', file, api, subject, change: message, action: change.action });
    }
  }
  return changes;
}

function graphqlChanges(from: ContractSet, to: ContractSet): ContractChange[] {
  const changes: ContractChange[] = [];
  for (const name of new Set([...from.graphql.keys(), ...to.graphql.keys()])) {
    const [before, after] = [from.graphql.get(name), to.graphql.get(name)];
    const file = `graphql/${name}`;
    const api = graphqlTitle(after ?? before, name);
    if (before === after) continue;
    if (before === undefined || after === undefined) {
      changes.push(
        before === undefined
          ? { severity: 'additive', kind: 'graphql', file, api, subject: name, change: 'the schema was added', action: 'nothing to do' }
          : { severity: 'breaking', kind: 'graphql', file, api, subject: name, change: 'the schema was removed', action: 'stop sending its operations' },
      );
      continue;
    }
    for (const change of findGraphqlChanges(buildSchema(before), buildSchema(after))) {
      changes.push({
        severity: change.severity,
        kind: 'graphql',
        file,
        api,
        subject: change.subject,
        change: change.change,
        action: change.action,
        ...(change.rule ? { rules: [`graphql:${change.rule}`] } : {}),
      });
    }
  }
  return changes;
}

/** One finding of `buf breaking --error-format json`. */
interface BufFinding {
  path: string;
  start_line: number;
  start_column: number;
  type: string;
  message: string;
}

/** `buf breaking` between two images (FILE rules, buf's default); [] when nothing breaks. */
function bufBreaking(fromImage: Uint8Array, toImage: Uint8Array): BufFinding[] {
  const dir = mkdtempSync(join(tmpdir(), 'contracts-breaking-'));
  try {
    writeFileSync(join(dir, 'from.binpb'), fromImage);
    writeFileSync(join(dir, 'to.binpb'), toImage);
    const run = spawnSync(BUF, ['breaking', join(dir, 'to.binpb'), '--against', join(dir, 'from.binpb'), '--error-format', 'json'], { cwd: ROOT, encoding: 'utf8' });
    if (run.status === 0) return [];
    // Exit code 100 means "breaking changes found"; anything else is a failure to run the check.
    const lines = run.stdout.split('\n').filter((line) => line.trim() !== '');
    if (run.status !== 100 || lines.length === 0) throw new Error(`buf breaking could not run (exit ${String(run.status)}): ${run.stderr || run.stdout}`);
    return lines.map((line) => JSON.parse(line) as BufFinding);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** "the Cloud API" from the module's top-level package (`cloud.compute.v1` → `Cloud API`). */
function protoApi(files: Iterable<{ package: string }>): string {
  for (const file of files) {
    const top = file.package.split('.')[0];
    if (top) return `${top.charAt(0).toUpperCase()}${top.slice(1)} API`;
  }
  return 'protobuf API';
}

function protoChanges(from: ContractSet, to: ContractSet): ContractChange[] {
  const [fromImage, toImage] = [protoImage(from), protoImage(to)];
  if (!fromImage && !toImage) return [];
  const before = fromImage ? readDescriptorSet(fromImage) : new Map();
  const after = toImage ? readDescriptorSet(toImage) : new Map();
  const api = protoApi([...after.values(), ...before.values()]);
  const changes: ContractChange[] = findProtoChanges(before, after).map((change) => ({ ...change, kind: 'proto', file: `proto/${change.file}`, api }));
  if (!fromImage || !toImage) return changes;

  for (const finding of bufBreaking(fromImage, toImage)) {
    const tokens = [...finding.message.matchAll(/"([^"]+)"/g)].map((match) => match[1]!);
    const score = (change: ContractChange) => {
      const words = new Set(`${change.subject} ${change.change}`.split(/[^\w]+/));
      return tokens.filter((token) => words.has(token)).length;
    };
    const candidates = changes.filter((change) => change.severity === 'breaking' && change.file === `proto/${finding.path}`);
    const best = Math.max(0, ...candidates.map(score));
    const matched = candidates.filter((change) => score(change) === best && best >= Math.min(2, tokens.length) && best > 0);
    const rule = `buf:${finding.type}`;
    if (matched.length > 0) {
      for (const change of matched) change.rules = [...new Set([...(change.rules ?? []), rule])];
    } else {
      changes.push({
        severity: 'breaking',
        kind: 'proto',
        file: `proto/${finding.path}`,
        api,
        subject: `${finding.path}:${finding.start_line}:${finding.start_column}`,
        change: finding.message.replace(/\.$/, ''),
        action: 'adapt the client before it talks to the new version',
        rules: [rule],
      });
    }
  }
  return changes;
}

/** The changelog from one set of contracts to another. */
export function computeChangelog(from: ContractSet, to: ContractSet): Changelog {
  const side = (set: ContractSet) => ({ label: set.label, ...(set.version ? { version: set.version } : {}) });
  return makeChangelog(side(from), side(to), [...openApiChanges(from, to), ...protoChanges(from, to), ...graphqlChanges(from, to)]);
}
