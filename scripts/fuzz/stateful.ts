/**
 * The stateful half of the contract fuzzer (docs/testing.md, "Stateful contract fuzzing"): call
 * sequences built by following the OpenAPI documents' `links` (scripts/fuzz/links.ts), over REST.
 *
 * A sequence starts with a producer (an operation that makes a resource, e.g. createUser as the
 * admin), then walks up to STATEFUL_STEPS links chosen at random among every link the sequence's
 * answers offer so far (each answered 2xx), with request bodies generated from the schemas. A linked
 * call is made as the principal who made the answer the link comes from, or as the link's
 * `x-credential` (a sign-in's token), or, one time in four, as the model's superior (admin,
 * superuser), so states only a superior reaches (a published article) occur too. Every answer is
 * checked against the contract (no 5xx, a documented status and content type, a body valid against
 * its schema — scripts/fuzz/http.ts `checkAnswer`), and:
 *
 * - **invisible to peers**: right after a private producer, another principal of equal or lower rank
 *   (the model's peer) calls every operation that takes the new id; each must answer 404, or 403
 *   where the operation documents 403 — never 2xx (and the model's GraphQL check, if any);
 * - **gone after delete**: when a `delete…` operation answers 2xx, every operation that takes the
 *   deleted id (the operations under the path prefixes the sequence's links put that id into) is
 *   called as the creator and as the superior and must answer 404 (or what the model documents for
 *   that operation on a deleted resource, e.g. publishArticle's 409); the sequence ends there.
 *
 * Deterministic: sequence n of a contract uses seed STATEFUL_SEED + n for every choice and every
 * generated value; a failure prints its seed, the contract and n, and the calls that led to it.
 */
import fc from 'fast-check';
import type { App } from '../../src/server/build.js';
import { validValue, type Schema } from '../../test/contract/schema-arbitrary.js';
import { checkAnswer, encodeSegment, send, type FuzzOperation } from './http.js';
import { evaluate, type Exchange, type LinkSpec } from './links.js';

/** Someone who calls: a bearer token, or none (anonymous). */
export interface Principal {
  name: string;
  token?: string;
}

/** What a model's extra (non-REST) checks get: the server, the resource id, and who asks. */
export interface ExtraCheckContext {
  url: string;
  id: string;
  principal: Principal;
  /** The principal is the model's superior (passes every role check). */
  superior: boolean;
}

export interface StatefulSetup {
  /** Calls the producers. */
  creator: Principal;
  /** Equal or lower rank than the resource's owner: must not see it (absent for contracts without principals). */
  peer?: Principal;
  /** The highest rank (admin, superuser); the creator again when there is none. */
  superior: Principal;
  /** Adjusts a generated request body (e.g. an existing topic id for createArticle). */
  patch?(operationId: string, body: unknown): unknown;
}

export interface StatefulModel {
  contract: string;
  setup(url: string): Promise<StatefulSetup>;
  /** Operations a sequence may start with; `private`: the peer check applies to what they make. */
  producers: Array<{ operationId: string; private: boolean; as?: 'creator' | 'superior' }>;
  /** Statuses other than 404 an operation documents for a deleted resource (per operationId). */
  afterDelete?: Record<string, number[]>;
  /** Operations after whose 2xx the resource is public: peers may then read it. */
  publishes?: string[];
  /** Extra checks over another API family (GraphQL): problems found, empty when fine. */
  peerCheck?(context: ExtraCheckContext): Promise<string[]>;
  deletedCheck?(context: ExtraCheckContext): Promise<string[]>;
}

export interface StatefulOptions {
  url: string;
  /** The server's App (its OpenAPI engines validate the answers). */
  app: App;
  models: StatefulModel[];
  /** Every contract's operations (scripts/fuzz/http.ts operationsOf) and links (links.ts linksOf). */
  operations: Record<string, FuzzOperation[]>;
  links: Record<string, Map<string, LinkSpec[]>>;
  seed: number;
  sequences: number;
  steps: number;
  /** `<contract>:<n>`: only that sequence (a replay). */
  only?: string;
}

export interface StatefulOutcome {
  ok: boolean;
  lines: string[];
  sequences: number;
  operations: number;
  longest: number;
  failures: number;
}

/** A small seeded generator for the choices (mulberry32). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class SequenceFailure extends Error {}

interface Carrier {
  template: string;
  parameter: string;
  value: string;
}

interface Sequence {
  contract: string;
  index: number;
  seed: number;
  next: () => number;
  trace: string[];
  frontier: Array<{ link: LinkSpec; exchange: Exchange; principal: Principal }>;
  carriers: Carrier[];
  values: Record<string, string>;
  deleted: Set<string>;
  isPublic: boolean;
  calls: number;
  samples: number;
}

/** The template cut after the `{parameter}` segment: the path of everything that takes that id. */
function prefixOf(template: string, parameter: string): string | undefined {
  const segments = template.split('/');
  const at = segments.indexOf(`{${parameter}}`);
  return at < 0 ? undefined : segments.slice(0, at + 1).join('/');
}

function under(template: string, prefix: string): boolean {
  return template === prefix || template.startsWith(`${prefix}/`);
}

export async function runStateful(options: StatefulOptions): Promise<StatefulOutcome> {
  const lines: string[] = [];
  let sequences = 0;
  let operations = 0;
  let longest = 0;
  let failures = 0;
  for (const model of options.models) {
    const operationList = options.operations[model.contract] ?? [];
    const byId = new Map(operationList.map((operation) => [operation.id, operation]));
    const links = options.links[model.contract] ?? new Map<string, LinkSpec[]>();
    const setup = await model.setup(options.url);
    for (let index = 0; index < options.sequences; index++) {
      if (options.only && options.only !== `${model.contract}:${index}`) continue;
      const seed = options.seed + index;
      const sequence: Sequence = {
        contract: model.contract,
        index,
        seed,
        next: random(seed),
        trace: [],
        frontier: [],
        carriers: [],
        values: {},
        deleted: new Set(),
        isPublic: false,
        calls: 0,
        samples: 0,
      };
      sequences++;
      try {
        await runSequence(options, model, setup, byId, links, sequence);
      } catch (error) {
        if (!(error instanceof SequenceFailure)) throw error;
        failures++;
        lines.push(
          `failed: ${model.contract} sequence ${index} — reproduce with STATEFUL_SEED=${options.seed} STATEFUL_ONLY=${model.contract}:${index}`,
          `  problem: ${error.message.slice(0, 1500)}`,
          ...sequence.trace.map((step) => `  ${step}`),
        );
      }
      operations += sequence.calls;
      longest = Math.max(longest, sequence.calls);
    }
  }
  return { ok: failures === 0, lines, sequences, operations, longest, failures };
}

async function runSequence(
  options: StatefulOptions,
  model: StatefulModel,
  setup: StatefulSetup,
  byId: Map<string, FuzzOperation>,
  links: Map<string, LinkSpec[]>,
  sequence: Sequence,
): Promise<void> {
  const pick = <T>(items: T[]): T => items[Math.floor(sequence.next() * items.length)] as T;
  const producer = pick(model.producers);
  const operation = byId.get(producer.operationId);
  if (!operation) throw new Error(`${model.contract}: no operation ${producer.operationId}`);
  const creator = producer.as === 'superior' ? setup.superior : setup.creator;
  const made = await call(options, model, setup, sequence, operation, creator, {}, {}, undefined, links);
  if (made.status < 200 || made.status > 299) return; // a documented refusal (checked): nothing to follow
  // The producer's id: the values its links carry into path parameters.
  const produced = sequence.carriers.map((carrier) => carrier.value);
  const resourceId = produced[0];
  if (producer.private && setup.peer && resourceId !== undefined) {
    await peerCheck(options, model, setup, byId, sequence, setup.peer, resourceId);
  }
  const steps = 1 + Math.floor(sequence.next() * options.steps);
  for (let step = 0; step < steps; step++) {
    const open = sequence.frontier.filter(({ exchange, link }) => {
      const values = Object.values(link.parameters).map((value) => evaluate(value, exchange));
      return !values.some((value) => typeof value === 'string' && sequence.deleted.has(value));
    });
    if (open.length === 0) return;
    const { link, exchange, principal: from } = pick(open);
    const target = byId.get(link.operationId);
    if (!target) throw new SequenceFailure(`link ${link.name} of ${link.from} names ${link.operationId}, which ${model.contract} does not have`);
    const path: Record<string, string> = {};
    const query: Record<string, string> = {};
    let applicable = true;
    for (const [qualified, expression] of Object.entries(link.parameters)) {
      const [where, name] = qualified.includes('.') ? (qualified.split('.', 2) as [string, string]) : [undefined, qualified];
      const parameter = target.parameters.find((candidate) => candidate.name === name && (where === undefined || candidate.in === where));
      const value = evaluate(expression, exchange);
      if (!parameter || value === undefined) {
        applicable = false;
        break;
      }
      (parameter.in === 'path' ? path : query)[name] = String(value);
    }
    if (!applicable) continue;
    let body: unknown;
    if (link.requestBody !== undefined) {
      body = evaluate(link.requestBody, exchange);
      if (body === undefined) continue;
    }
    const credential = link.credential === undefined ? undefined : evaluate(link.credential, exchange);
    const principal = typeof credential === 'string' ? { name: `${link.from}'s token`, token: credential } : sequence.next() < 0.25 ? setup.superior : from;
    const answer = await call(options, model, setup, sequence, target, principal, path, query, body, links);
    if (answer.status < 200 || answer.status > 299) continue;
    if (model.publishes?.includes(target.id)) sequence.isPublic = true;
    if (target.method === 'DELETE' && target.id.startsWith('delete')) {
      const parameter = target.template.match(/\{([^}]+)\}(?!.*\{)/)?.[1];
      const value = parameter ? path[parameter] : undefined;
      if (!parameter || value === undefined) continue;
      sequence.deleted.add(value);
      await deletedCheck(options, model, setup, byId, sequence, target, parameter, value, [creator, setup.superior]);
      if (value === resourceId) return;
    }
  }
  if (producer.private && setup.peer && resourceId !== undefined && !sequence.isPublic && !sequence.deleted.has(resourceId)) {
    await peerCheck(options, model, setup, byId, sequence, setup.peer, resourceId);
  }
}

/** The operations that take `value` as a path parameter: under every prefix the sequence's links put it into. */
function operationsTaking(
  byId: Map<string, FuzzOperation>,
  sequence: Sequence,
  value: string,
  extra?: Carrier,
): Array<{ operation: FuzzOperation; parameter: string }> {
  const prefixes = new Map<string, string>();
  for (const carrier of [...sequence.carriers, ...(extra ? [extra] : [])]) {
    if (carrier.value !== value) continue;
    const prefix = prefixOf(carrier.template, carrier.parameter);
    if (prefix) prefixes.set(prefix, carrier.parameter);
  }
  const found: Array<{ operation: FuzzOperation; parameter: string }> = [];
  for (const operation of byId.values()) {
    for (const [prefix, parameter] of prefixes) {
      if (under(operation.template, prefix) && operation.parameters.some((candidate) => candidate.in === 'path' && candidate.name === parameter)) {
        found.push({ operation, parameter });
        break;
      }
    }
  }
  return found;
}

async function peerCheck(
  options: StatefulOptions,
  model: StatefulModel,
  setup: StatefulSetup,
  byId: Map<string, FuzzOperation>,
  sequence: Sequence,
  peer: Principal,
  id: string,
): Promise<void> {
  for (const { operation, parameter } of operationsTaking(byId, sequence, id)) {
    const answer = await call(options, model, setup, sequence, operation, peer, { [parameter]: id }, {}, undefined, undefined);
    const allowed = [404, ...(operation.responses['403'] ? [403] : [])];
    if (answer.status === 400 && answer.body !== undefined) {
      // A 400 about the body says nothing about the resource, if the superior's identical request is refused too.
      const control = await call(options, model, setup, sequence, operation, setup.superior, { [parameter]: id }, {}, answer.body, undefined);
      if (control.status === 400) continue;
      throw new SequenceFailure(
        `${operation.id} by ${peer.name} (a peer of the owner) answered 400 where ${setup.superior.name}'s identical request answered ${control.status}: the answer tells the peer the resource exists`,
      );
    }
    if (!allowed.includes(answer.status)) {
      throw new SequenceFailure(
        `${operation.id} by ${peer.name} (a peer of the owner) on another principal's ${parameter} answered ${answer.status}; the resource must be invisible (${allowed.join(' or ')})`,
      );
    }
  }
  const problems = (await model.peerCheck?.({ url: options.url, id, principal: peer, superior: false })) ?? [];
  if (problems.length > 0) throw new SequenceFailure(`as ${peer.name} (a peer of the owner): ${problems.join('; ')}`);
}

async function deletedCheck(
  options: StatefulOptions,
  model: StatefulModel,
  setup: StatefulSetup,
  byId: Map<string, FuzzOperation>,
  sequence: Sequence,
  deleter: FuzzOperation,
  parameter: string,
  value: string,
  principals: Principal[],
): Promise<void> {
  const taking = operationsTaking(byId, sequence, value, { template: deleter.template, parameter, value });
  for (const principal of principals.filter((candidate, at) => principals.findIndex((other) => other.name === candidate.name) === at)) {
    for (const { operation, parameter: name } of taking) {
      const answer = await call(options, model, setup, sequence, operation, principal, { [name]: value }, {}, undefined, undefined);
      // Below the superior, a role refusal (the documented 403: a writer may not publish at all) says nothing about the resource.
      const roleRefusal = principal.name !== setup.superior.name && operation.responses['403'] ? [403] : [];
      // A generated body may be refused first (400), whatever the id: that says nothing about the resource.
      const bodyRefusal = answer.body !== undefined && operation.responses['400'] ? [400] : [];
      const allowed = [404, ...roleRefusal, ...bodyRefusal, ...(model.afterDelete?.[operation.id] ?? [])];
      if (!allowed.includes(answer.status)) {
        throw new SequenceFailure(
          `${operation.id} by ${principal.name} after ${deleter.id} of ${name} ${value} answered ${answer.status}, not ${allowed.join(' or ')}`,
        );
      }
    }
    const problems = (await model.deletedCheck?.({ url: options.url, id: value, principal, superior: principal.name === setup.superior.name })) ?? [];
    if (problems.length > 0) throw new SequenceFailure(`as ${principal.name} after ${deleter.id}: ${problems.join('; ')}`);
  }
}

function jsonMediaType(operation: FuzzOperation): { mediaType: string; schema: Schema } | undefined {
  const content = operation.body?.content ?? {};
  const entry = Object.entries(content).find(([mediaType]) => /json/.test(mediaType)) ?? Object.entries(content).find(([mediaType]) => mediaType === '*/*');
  if (!entry) return undefined;
  return { mediaType: entry[0] === '*/*' ? 'application/json' : entry[0], schema: entry[1].schema ?? {} };
}

/** One call: fills what the caller did not give, sends it, checks the answer against the contract, records it. */
async function call(
  options: StatefulOptions,
  model: StatefulModel,
  setup: StatefulSetup,
  sequence: Sequence,
  operation: FuzzOperation,
  principal: Principal,
  path: Record<string, string>,
  query: Record<string, string>,
  givenBody: unknown,
  links: Map<string, LinkSpec[]> | undefined,
): Promise<{ status: number; body: unknown }> {
  const filled: Record<string, string> = { ...path };
  for (const parameter of operation.parameters) {
    if (parameter.in !== 'path' || filled[parameter.name] !== undefined) continue;
    filled[parameter.name] = sequence.values[parameter.name] ?? 'stateful';
  }
  let body = givenBody;
  const media = jsonMediaType(operation);
  if (body === undefined && media && (operation.body?.required || sequence.next() < 0.8)) {
    body = fc.sample(validValue(media.schema), { seed: sequence.seed * 1000 + sequence.samples++, numRuns: 1 })[0];
    body = setup.patch ? setup.patch(operation.id, body) : body;
  }
  let target = operation.template.replace(/\{([^}]+)\}/g, (_, name: string) => encodeSegment(filled[name] ?? ''));
  const search = new URLSearchParams(query).toString();
  if (search) target += `?${search}`;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (principal.token) headers.authorization = `Bearer ${principal.token}`;
  if (body !== undefined) headers['content-type'] = media?.mediaType ?? 'application/json';
  sequence.calls++;
  const answer = await send(options.url, operation.method, target, headers, body === undefined ? undefined : { bytes: JSON.stringify(body) });
  sequence.trace.push(
    `${sequence.calls}. ${operation.id}: ${operation.method} ${target} as ${principal.name}${body === undefined ? '' : ` ${JSON.stringify(body).slice(0, 160)}`} → ${answer.status}`,
  );
  try {
    checkAnswer(options.app, operation, operation.method, target, answer);
  } catch (error) {
    throw new SequenceFailure(`${operation.id} answered outside the contract: ${error instanceof Error ? error.message : String(error)}`);
  }
  let responseBody: unknown;
  try {
    responseBody = answer.text && /json/.test(answer.contentType) ? JSON.parse(answer.text) : answer.text;
  } catch {
    responseBody = answer.text;
  }
  if (answer.status >= 200 && answer.status <= 299 && links) {
    const exchange: Exchange = {
      method: operation.method,
      url: `${options.url}${target}`,
      path: filled,
      query,
      requestBody: body,
      status: answer.status,
      responseBody,
    };
    for (const link of links.get(operation.id) ?? []) {
      if (link.status !== String(answer.status)) continue;
      sequence.frontier.push({ link, exchange, principal });
      const target = options.operations[model.contract]?.find((candidate) => candidate.id === link.operationId);
      for (const [qualified, expression] of Object.entries(link.parameters)) {
        const name = qualified.includes('.') ? (qualified.split('.', 2)[1] ?? qualified) : qualified;
        const value = evaluate(expression, exchange);
        if (!target || typeof value !== 'string' || !target.parameters.some((parameter) => parameter.in === 'path' && parameter.name === name)) continue;
        sequence.values[name] = value;
        if (!sequence.carriers.some((carrier) => carrier.template === target.template && carrier.parameter === name && carrier.value === value)) {
          sequence.carriers.push({ template: target.template, parameter: name, value });
        }
      }
    }
  }
  return { status: answer.status, body };
}
