/**
 * Runs the stateful contract fuzzing (scripts/fuzz/stateful.ts over REST and GraphQL, and
 * scripts/fuzz/stateful-grpc.ts over gRPC via reflection) against one fresh live server and prints
 * its figures. Called by scripts/fuzz-contract.ts after the per-operation fuzzing.
 *
 * STATEFUL_SEED (default FUZZ_SEED, else 20261129), STATEFUL_SEQUENCES (default 12 per contract and
 * per cloud resource service), STATEFUL_STEPS (default 6: at most that many linked calls after the
 * producer, plus the checks), STATEFUL_ONLY=<contract>:<n> (or grpc:<Service>:<n>) replays one sequence.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { resolveRefs } from '../../test/contract/schema-arbitrary.js';
import { startLiveServer } from '../contract-server.js';
import { operationsOf } from './http.js';
import { linksOf } from './links.js';
import { STATEFUL_MODELS, STATEFUL_SERVER_ENV } from './models.js';
import { runStateful } from './stateful.js';
import { runStatefulGrpc } from './stateful-grpc.js';

const ROOT = new URL('../../', import.meta.url).pathname;

export interface StatefulRun {
  ok: boolean;
  lines: string[];
}

/** Stateful sequences over the given OpenAPI contracts, and over gRPC when `grpc` is set; never throws for a failed check. */
export async function runStatefulFuzz(contracts: string[], grpc: boolean): Promise<StatefulRun> {
  const seed = Number(process.env.STATEFUL_SEED ?? process.env.FUZZ_SEED ?? 20261129);
  const sequences = Number(process.env.STATEFUL_SEQUENCES ?? 12);
  const steps = Number(process.env.STATEFUL_STEPS ?? 6);
  const only = process.env.STATEFUL_ONLY;
  const models = STATEFUL_MODELS.filter((model) => contracts.includes(model.contract));
  const started = performance.now();
  const server = await startLiveServer('stateful', { COMPUTE_WORK_MS: '20', OPERATION_POLL_MS: '20', ...STATEFUL_SERVER_ENV });
  console.log(
    `\n=== stateful fuzz: ${[...models.map((model) => model.contract), ...(grpc ? ['gRPC'] : [])].join(', ')} against ${server.url} (STATEFUL_SEED=${seed})`,
  );
  const lines: string[] = [];
  let ok = true;
  try {
    const operations: Parameters<typeof runStateful>[0]['operations'] = {};
    const links: Parameters<typeof runStateful>[0]['links'] = {};
    for (const model of models) {
      const raw = parseYaml(readFileSync(join(ROOT, 'contracts/openapi', `${model.contract}.yaml`), 'utf8')) as unknown;
      operations[model.contract] = operationsOf(model.contract, raw);
      links[model.contract] = linksOf(resolveRefs(raw, raw) as Parameters<typeof linksOf>[0]);
    }
    const rest = await runStateful({ url: server.url, app: server.app, models, operations, links, seed, sequences, steps, only });
    const mean = rest.sequences > 0 ? (rest.operations / rest.sequences).toFixed(1) : '0';
    lines.push(
      `REST/GraphQL: ${rest.sequences} sequences, ${rest.operations} operations (${mean} per sequence, longest ${rest.longest}), ${rest.failures} failures found`,
      ...rest.lines,
    );
    ok &&= rest.ok;
    if (grpc && (!only || only.startsWith('grpc:'))) {
      const rpc = await runStatefulGrpc({ url: server.url, seed, sequences: Math.max(1, Math.ceil(sequences / 4)), only });
      const rpcMean = rpc.sequences > 0 ? (rpc.operations / rpc.sequences).toFixed(1) : '0';
      lines.push(
        `gRPC (reflection): ${rpc.services} resource services, ${rpc.sequences} sequences, ${rpc.operations} RPCs (${rpcMean} per sequence, longest ${rpc.longest}), ${rpc.failures} failures found`,
        ...rpc.lines,
      );
      ok &&= rpc.ok;
    }
  } catch (error) {
    ok = false;
    lines.push(`crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  } finally {
    await server.close();
  }
  lines.unshift(`stateful fuzz in ${((performance.now() - started) / 1000).toFixed(1)} s (STATEFUL_SEED=${seed})`);
  for (const line of lines) console.log(line);
  return { ok, lines };
}
