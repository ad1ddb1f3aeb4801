/**
 * Contract fuzzing (docs/contracts.md): for every operation of every contracts/openapi/*.yaml,
 * fast-check generates requests from the operation — valid ones from its schemas and invalid ones
 * (wrong types, missing required and unknown properties, huge strings, odd unicode, malformed JSON,
 * wrong content types, random path parameters and query values) — sends them to a live server with
 * a valid credential, none, or a garbage one, and asserts: no 5xx, the server stays up (`/healthz`
 * after each operation), and every response is valid against the contract (a documented status, a
 * documented content type, a body valid against its schema — `expectMatchesContract`).
 *
 * Deterministic: FUZZ_SEED (default 20261122) seeds every operation (seed + its index); a failure
 * prints the seed and the request. FUZZ_RUNS (default 40) runs per operation; FUZZ_ONLY=<operationId>
 * narrows the run; FUZZ_SHRINK=1 shrinks a counterexample before reporting it.
 *
 * Standalone: `node --import tsx scripts/fuzz-contract.ts [contract…]`; scripts/contract-test.ts calls `runFuzzContract()`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { hugeString, invalidValue, oddString, resolveRefs, validValue } from '../test/contract/schema-arbitrary.js';
import { FUZZ_FIXTURES, FUZZ_SERVER_ENV, type FuzzFixtures } from '../test/contract/fuzz-fixtures.js';
import { startLiveServer } from './contract-server.js';
import { runStatefulFuzz } from './fuzz/run-stateful.js';
import { checkAnswer, encodeSegment, operationsOf, send, type Document, type FuzzOperation, type Parameter } from './fuzz/http.js';

const ROOT = new URL('../', import.meta.url).pathname;

interface FuzzRequest {
  path: Record<string, string>;
  query: Array<[string, string]>;
  auth: 'valid' | 'none' | 'garbage';
  accept?: string;
  body?: { contentType?: string; bytes: string | Uint8Array };
}

const WRONG_CONTENT_TYPES = [
  'text/plain',
  'application/xml',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=fuzz',
  'application/json; charset=latin1',
  'application/octet-stream',
  'image/png',
  '',
  'application/json/../x',
];
const MALFORMED_JSON = [
  '{',
  '{"a":',
  'nul',
  '[1,2',
  '\u0000',
  '{"a":1}}',
  '{"a":1,}',
  "{'a':1}",
  '"unterminated',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"x":1}}}',
  '1e999999',
  '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
];

/** A path segment generator: schema-valid values, known ids, and hostile strings. */
function pathValue(parameter: Parameter, fixtures: FuzzFixtures): fc.Arbitrary<string> {
  const known = fixtures.pathValues[parameter.name] ?? [];
  const options: Array<fc.WeightedArbitrary<string>> = [
    { weight: 2, arbitrary: validValue(parameter.schema ?? { type: 'string' }).map(String) },
    { weight: 1, arbitrary: fc.oneof(oddString, fc.string({ maxLength: 30 }), fc.constantFrom('0', '-1', 'null', 'undefined', '%2F', '..', 'a'.repeat(300))) },
  ];
  if (known.length > 0) options.push({ weight: 3, arbitrary: fc.constantFrom(...known) });
  // Dot segments never reach the server as such (URL parsing resolves them), so they are not sent.
  return fc.oneof(...options).filter((value) => value !== '' && value.split('/').every((segment) => !/^(\.|%2e){1,2}$/i.test(segment)));
}

function queryValue(parameter: Parameter): fc.Arbitrary<string[]> {
  const schema = parameter.schema ?? { type: 'string' };
  const render = (value: unknown): string[] =>
    Array.isArray(value)
      ? value.map((item) => (typeof item === 'string' ? item : JSON.stringify(item)))
      : [typeof value === 'string' ? value : JSON.stringify(value)];
  return fc
    .oneof(
      { weight: 3, arbitrary: validValue(schema).map(render) },
      { weight: 2, arbitrary: invalidValue(schema).map(render) },
      { weight: 1, arbitrary: fc.array(fc.oneof(fc.string({ maxLength: 12 }), oddString), { minLength: 1, maxLength: 3 }) },
      // Kept under Node's 16 KiB header limit: a longer URL is refused (431) before any contract applies.
    )
    .map((values) => values.map((value) => value.slice(0, 1000)));
}

function bodyArbitrary(operation: FuzzOperation): fc.Arbitrary<FuzzRequest['body']> {
  const none = fc.constant(undefined);
  if (!operation.body) {
    if (['GET', 'HEAD'].includes(operation.method)) return none;
    return fc.oneof(
      { weight: 4, arbitrary: none },
      { weight: 1, arbitrary: fc.record({ contentType: fc.constantFrom('application/json', 'text/plain'), bytes: fc.json() }) },
    );
  }
  const options: Array<fc.WeightedArbitrary<FuzzRequest['body']>> = [{ weight: operation.body.required ? 1 : 2, arbitrary: none }];
  for (const [mediaType, media] of Object.entries(operation.body.content)) {
    if (/json/.test(mediaType)) {
      const schema = media.schema ?? {};
      options.push(
        { weight: 6, arbitrary: validValue(schema).map((value) => ({ contentType: mediaType, bytes: JSON.stringify(value) })) },
        { weight: 4, arbitrary: invalidValue(schema).map((value) => ({ contentType: mediaType, bytes: JSON.stringify(value) ?? 'undefined' })) },
        { weight: 1, arbitrary: fc.constantFrom(...MALFORMED_JSON).map((bytes) => ({ contentType: mediaType, bytes })) },
        { weight: 1, arbitrary: hugeString.map((text) => ({ contentType: mediaType, bytes: JSON.stringify({ text }) })) },
        {
          weight: 1,
          arbitrary: fc
            .tuple(validValue(schema), fc.constantFrom(...WRONG_CONTENT_TYPES))
            .map(([value, contentType]) => ({ contentType: contentType || undefined, bytes: JSON.stringify(value) })),
        },
      );
    } else {
      // Any bytes with any content type (`*/*`, binary uploads).
      options.push(
        {
          weight: 4,
          arbitrary: fc.record({
            contentType: fc.constantFrom(
              mediaType === '*/*' ? 'application/json' : mediaType,
              'text/plain; charset=utf-8',
              'application/x-www-form-urlencoded',
              'multipart/form-data; boundary=x',
              'image/png',
            ),
            bytes: fc.oneof(fc.json(), fc.uint8Array({ maxLength: 512 })),
          }),
        },
        { weight: 1, arbitrary: hugeString.map((bytes) => ({ contentType: 'text/plain', bytes })) },
      );
    }
  }
  return fc.oneof(...options);
}

function requestArbitrary(operation: FuzzOperation, fixtures: FuzzFixtures, document: Document): fc.Arbitrary<FuzzRequest> {
  const pathParameters = operation.parameters.filter((parameter) => parameter.in === 'path');
  const queryParameters = operation.parameters.filter((parameter) => parameter.in === 'query');
  const query = fc
    .tuple(
      fc.tuple(
        ...queryParameters.map((parameter) =>
          fc.option(queryValue(parameter), { freq: 2 }).map((values) => (values ?? []).map((value) => [parameter.name, value] as [string, string])),
        ),
      ),
      fc.option(fc.array(fc.tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 16 })), { maxLength: 2 }), { freq: 4 }),
    )
    .map(([known, extra]) => [...known.flat(), ...(extra ?? [])]);
  const needsAuth =
    operation.security.length > 0 &&
    operation.security.some((requirement) =>
      Object.keys(requirement).every((scheme) => fixtures.tokens[scheme] !== undefined && document.components?.securitySchemes?.[scheme]),
    );
  return fc.record({
    path: fc.record(Object.fromEntries(pathParameters.map((parameter) => [parameter.name, pathValue(parameter, fixtures)]))),
    query,
    auth: needsAuth ? fc.constantFrom<FuzzRequest['auth']>('valid', 'valid', 'none', 'garbage') : fc.constantFrom<FuzzRequest['auth']>('none', 'garbage'),
    accept: fc.option(fc.constantFrom('application/json', 'text/html', '*/*', 'application/xml', 'application/problem+json'), { nil: undefined }),
    body: bodyArbitrary(operation),
  });
}

function authHeaders(request: FuzzRequest, operation: FuzzOperation, fixtures: FuzzFixtures, document: Document): Record<string, string> {
  if (request.auth === 'none') return {};
  if (request.auth === 'garbage') return { authorization: 'Bearer not.a.token', 'x-access-token': 'garbage' };
  const requirement = operation.security.find((candidate) => Object.keys(candidate).every((scheme) => fixtures.tokens[scheme] !== undefined)) ?? {};
  const headers: Record<string, string> = {};
  for (const name of Object.keys(requirement)) {
    const scheme = document.components?.securitySchemes?.[name];
    const token = fixtures.tokens[name] ?? '';
    if (scheme?.type === 'http' && scheme.scheme?.toLowerCase() === 'bearer') headers.authorization = `Bearer ${token}`;
    else if (scheme?.type === 'apiKey' && scheme.in === 'header' && scheme.name) headers[scheme.name.toLowerCase()] = token;
  }
  return headers;
}

function describe(method: string, target: string, headers: Record<string, string>, body: FuzzRequest['body']): string {
  const shownBody = body === undefined ? '' : typeof body.bytes === 'string' ? body.bytes.slice(0, 300) : `<${body.bytes.length} bytes>`;
  return `${method} ${target.slice(0, 200)}${target.length > 200 ? '…' : ''} ${JSON.stringify(headers).slice(0, 200)} ${shownBody.slice(0, 200)}`;
}

export interface FuzzOutcome {
  contract: string;
  ok: boolean;
  lines: string[];
  /** Operations fuzzed without a failure, out of every operation of every contract. */
  operations: number;
  fuzzed: number;
  requests: number;
}

/** Fuzzes every operation of the given contracts (default: all) against one fresh server; never throws for a failed check. */
export async function runFuzzContract(contracts?: string[]): Promise<FuzzOutcome> {
  const all = readdirSync(join(ROOT, 'contracts/openapi'))
    .filter((file) => file.endsWith('.yaml'))
    .map((file) => file.replace(/\.yaml$/, ''))
    .sort();
  const names = contracts && contracts.length > 0 ? all.filter((name) => contracts.includes(name)) : all;
  const seed = Number(process.env.FUZZ_SEED ?? 20261122);
  const runs = Number(process.env.FUZZ_RUNS ?? 40);
  const only = process.env.FUZZ_ONLY;
  const failures: string[] = [];
  let operations = 0;
  let fuzzed = 0;
  let requests = 0;
  const started = performance.now();
  const stateful = process.env.FUZZ_STATEFUL ?? '1';
  if (stateful === 'only') return statefulOnly(names, names.length === all.length);
  const server = await startLiveServer('fuzz', { COMPUTE_WORK_MS: '50', ...FUZZ_SERVER_ENV });
  console.log(`\n=== fuzz: ${names.join(', ')} against ${server.url} (FUZZ_SEED=${seed}, ${runs} runs per operation)`);
  try {
    let index = 0;
    for (const contract of names) {
      const raw = parseYaml(readFileSync(join(ROOT, 'contracts/openapi', `${contract}.yaml`), 'utf8')) as unknown;
      const document = resolveRefs(raw, raw) as Document;
      const fixtures = FUZZ_FIXTURES[contract] ? await FUZZ_FIXTURES[contract](server.url) : { tokens: {}, pathValues: {} };
      // Deletions last, so the fixtures the other operations read survive as long as possible.
      const list = operationsOf(contract, raw).sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
      for (const operation of list) {
        operations++;
        const operationSeed = seed + index++;
        if (only && operation.id !== only) continue;
        let last = '';
        let problem = '';
        try {
          await fc.assert(
            fc.asyncProperty(requestArbitrary(operation, fixtures, document), async (request) => {
              let target = operation.template.replace(/\{([^}]+)\}/g, (_, name: string) => encodeSegment(request.path[name] ?? ''));
              const search = new URLSearchParams(request.query).toString();
              if (search) target += `?${search}`;
              const headers: Record<string, string> = { ...authHeaders(request, operation, fixtures, document) };
              if (request.accept) headers.accept = request.accept;
              if (request.body?.contentType) headers['content-type'] = request.body.contentType;
              last = describe(operation.method, target, headers, request.body);
              requests++;
              const answer = await send(server.url, operation.method, target, headers, request.body);
              try {
                checkAnswer(server.app, operation, operation.method, target, answer);
              } catch (error) {
                problem = (error instanceof Error ? error.message : String(error)).replaceAll(target, '<request>');
                throw error;
              }
            }),
            { numRuns: runs, seed: operationSeed, endOnFailure: process.env.FUZZ_SHRINK !== '1' },
          );
          fuzzed++;
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          failures.push(
            `failed: ${contract} ${operation.id} (${operation.method} ${operation.template}) — reproduce with FUZZ_SEED=${seed} FUZZ_ONLY=${operation.id}`,
            `  request: ${last}`,
            `  problem: ${(problem || message).slice(0, 1500)}`,
            ...message
              .split('\n')
              .filter((line) => /^(Counterexample|\{ seed)/.test(line))
              .map((line) => `  ${line.slice(0, 600)}`),
          );
        }
        const health = await fetch(`${server.url}/healthz`).catch((error: unknown) => ({ status: 0, error }));
        if (health.status !== 200) {
          failures.push(`the server is down after fuzzing ${contract} ${operation.id} (GET /healthz answered ${health.status})`);
          throw new Error('server down');
        }
      }
    }
  } catch (error) {
    if (!(error instanceof Error && error.message === 'server down'))
      failures.push(`crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  } finally {
    await server.close();
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  // Then sequences along the links (and over gRPC when every contract is fuzzed): scripts/fuzz/stateful.ts.
  const sequences = stateful === '0' ? undefined : await runStatefulFuzz(names, names.length === all.length);
  return {
    contract: `fuzz (${names.join(', ')})`,
    ok: failures.length === 0 && (sequences?.ok ?? true),
    lines: [
      `${fuzzed}/${operations} operations fuzzed without a failure, ${requests} requests in ${seconds} s (FUZZ_SEED=${seed})`,
      ...failures,
      ...(sequences?.lines ?? []),
    ],
    operations,
    fuzzed,
    requests,
  };
}

/** FUZZ_STATEFUL=only: the stateful sequences alone (a replay of STATEFUL_ONLY, or a quicker local run). */
async function statefulOnly(names: string[], grpc: boolean): Promise<FuzzOutcome> {
  const sequences = await runStatefulFuzz(names, grpc);
  return { contract: `stateful fuzz (${names.join(', ')})`, ok: sequences.ok, lines: sequences.lines, operations: 0, fuzzed: 0, requests: 0 };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const outcome = await runFuzzContract(process.argv.slice(2));
  console.log(`${outcome.ok ? 'PASS' : 'FAIL'} ${outcome.contract}: ${outcome.lines[0] ?? ''}`);
  for (const line of outcome.lines.slice(1)) console.log(`     ${line}`);
  process.exitCode = outcome.ok ? 0 : 1;
}
