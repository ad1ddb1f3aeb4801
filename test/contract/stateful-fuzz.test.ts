/**
 * The stateful fuzzer's checks (scripts/fuzz/stateful.ts) catch what they are there for. Against
 * the real server they find nothing (also run by `npm run test:contract`); so here a proxy in front of
 * the real server breaks one rule at a time — the way a faulty handler would — and the same sequences
 * must report it: a user that still answers 200 after it was deleted, a user another ordinary user
 * can read, an answer outside the contract, an article GraphQL still shows after its deletion.
 */
import { jest } from '@jest/globals';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { parse as parseYaml } from 'yaml';
import { resolveRefs } from './schema-arbitrary.js';
import { operationsOf } from '../../scripts/fuzz/http.js';
import { linksOf } from '../../scripts/fuzz/links.js';
import { STATEFUL_MODELS, STATEFUL_SERVER_ENV } from '../../scripts/fuzz/models.js';
import { runStateful, type StatefulModel, type StatefulOutcome } from '../../scripts/fuzz/stateful.js';
import { startServer, type TestServer } from '../support/app.js';
import { budget } from '../support/budget.js';

jest.setTimeout(budget(60_000));

interface Upstream {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** Rewrites an upstream answer (or leaves it): the deliberate fault under test. */
type Fault = (method: string, path: string, requestBody: string, answer: Upstream) => Upstream;

let server: TestServer;
let proxy: Server;
let proxyUrl = '';
let fault: Fault = (_method, _path, _body, answer) => answer;

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

beforeAll(async () => {
  server = await startServer({ ...STATEFUL_SERVER_ENV, COMPUTE_WORK_MS: '20' });
  proxy = createServer((request, response) => {
    void (async () => {
      const body = await readBody(request);
      const headers: Record<string, string> = {};
      for (const name of ['authorization', 'content-type', 'accept']) {
        const value = request.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const method = request.method ?? 'GET';
      const upstream = await fetch(`${server.url}${request.url ?? '/'}`, { method, headers, body: body === '' ? undefined : body, redirect: 'manual' });
      const answer = fault(method, (request.url ?? '/').split('?')[0] ?? '/', body, {
        status: upstream.status,
        headers: { 'content-type': upstream.headers.get('content-type') ?? '' },
        text: await upstream.text(),
      });
      response.writeHead(answer.status, answer.headers['content-type'] ? { 'content-type': answer.headers['content-type'] } : {});
      response.end(answer.text);
    })().catch((error: unknown) => {
      response.writeHead(599);
      response.end(String(error));
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise((resolve) => (proxy ? proxy.close(resolve) : resolve(undefined)));
  await server?.close();
});

/** Each test its own seed: the same seed on the same server would make the same names again (409). */
function run(contract: string, seed: number, sequences = 8): Promise<StatefulOutcome> {
  const raw = parseYaml(readFileSync(new URL(`../../contracts/openapi/${contract}.yaml`, import.meta.url), 'utf8')) as unknown;
  const model = STATEFUL_MODELS.find((candidate) => candidate.contract === contract) as StatefulModel;
  return runStateful({
    url: proxyUrl,
    app: server.app,
    models: [model],
    operations: { [contract]: operationsOf(contract, raw) },
    links: { [contract]: linksOf(resolveRefs(raw, raw) as Parameters<typeof linksOf>[0]) },
    seed,
    sequences,
    steps: 6,
  });
}

const USER = /^\/api\/users\/([^/]+)$/;

test('through an honest proxy the sequences find nothing, and they do delete users', async () => {
  const deleted: string[] = [];
  fault = (method, path, _body, answer) => {
    if (method === 'DELETE' && USER.test(path) && answer.status === 200) deleted.push(path);
    return answer;
  };
  const outcome = await run('users', 1000);
  expect(outcome.lines).toEqual([]);
  expect(outcome.failures).toBe(0);
  expect(outcome.sequences).toBe(8);
  expect(deleted.length).toBeGreaterThan(0);
});

test('a user that still answers 200 after deletion is reported', async () => {
  const made = new Map<string, string>();
  const gone = new Set<string>();
  fault = (method, path, _body, answer) => {
    if (method === 'POST' && path === '/api/users' && answer.status === 200) made.set((JSON.parse(answer.text) as { id: string }).id, answer.text);
    const id = USER.exec(path)?.[1];
    if (!id) return answer;
    if (method === 'DELETE' && answer.status === 200) gone.add(id);
    // The fault: a deleted user is still served from a stale copy.
    if (method === 'GET' && gone.has(id)) return { status: 200, headers: { 'content-type': 'application/json' }, text: made.get(id) ?? '' };
    return answer;
  };
  const outcome = await run('users', 2000);
  expect(gone.size).toBeGreaterThan(0);
  expect(outcome.failures).toBe(gone.size);
  expect(outcome.lines.join('\n')).toMatch(/getUser by the admin after deleteUser of id .* answered 200, not 404/);
  expect(outcome.lines.join('\n')).toMatch(/reproduce with STATEFUL_SEED=2000 STATEFUL_ONLY=users:\d+/);
});

test('a user another ordinary user can read is reported', async () => {
  const made = new Map<string, string>();
  fault = (method, path, _body, answer) => {
    if (method === 'POST' && path === '/api/users' && answer.status === 200) made.set((JSON.parse(answer.text) as { id: string }).id, answer.text);
    const id = USER.exec(path)?.[1];
    // The fault: a 404 (someone else's user) answered with the user anyway.
    if (method === 'GET' && id && answer.status === 404 && made.has(id))
      return { status: 200, headers: { 'content-type': 'application/json' }, text: made.get(id) ?? '' };
    return answer;
  };
  const outcome = await run('users', 3000, 2);
  expect(made.size).toBe(2);
  expect(outcome.failures).toBe(2);
  expect(outcome.lines.join('\n')).toMatch(/getUser by an ordinary user \(a peer of the owner\) on another principal's id answered 200/);
});

test('an answer outside the contract is reported', async () => {
  fault = (method, path, _body, answer) => {
    // The fault: the user record loses a required field.
    if (method === 'POST' && path === '/api/users' && answer.status === 200) {
      const { name: _name, ...rest } = JSON.parse(answer.text) as Record<string, unknown>;
      return { ...answer, text: JSON.stringify(rest) };
    }
    return answer;
  };
  const outcome = await run('users', 4000, 1);
  expect(outcome.failures).toBe(1);
  expect(outcome.lines.join('\n')).toMatch(/createUser answered outside the contract: .*must have required property 'name'/);
});

test('an article GraphQL still shows after its deletion is reported', async () => {
  const deleted = new Set<string>();
  fault = (method, path, requestBody, answer) => {
    const id = /^\/v1\/articles\/([^/]+)$/.exec(path)?.[1];
    if (method === 'DELETE' && id && answer.status === 204) deleted.add(id);
    if (path === '/graphql' && requestBody.includes('article(id: $id)')) {
      const asked = (JSON.parse(requestBody) as { variables: { id: string } }).variables.id;
      // The fault: the GraphQL resolver forgets the deleted status.
      if (deleted.has(asked))
        return { status: 200, headers: { 'content-type': 'application/json' }, text: JSON.stringify({ data: { article: { _id: asked } } }) };
    }
    return answer;
  };
  const outcome = await run('publishing', 5000, 12);
  expect(deleted.size).toBeGreaterThan(0);
  expect(outcome.failures).toBe(deleted.size);
  expect(outcome.lines.join('\n')).toMatch(/after deleteArticle: GraphQL article answered \{"_id":/);
});
