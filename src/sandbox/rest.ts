import { StreamedJson } from '../http/streamed-json.js';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Operation } from 'openapi-backend';
import { AppError } from '../errors.js';
import type { CallHandler, RestApiOptions, RestCall } from '../http/rest-api.js';
import type { RestReply } from '../http/reply.js';
import { sampleOf, type SchemaObject } from './sample.js';

/** What a `Prefer` header asks for, in Prism's words (`code=404`, `example=<name>`, `dynamic=true`). */
export interface Preference {
  code?: string;
  example?: string;
  dynamic?: boolean;
}

/** The preferences of a `Prefer` header (RFC 7240: comma-separated, `;` parameters alike); undefined when it asks for none of them. */
export function preferenceOf(header: string | string[] | undefined): Preference | undefined {
  if (header === undefined) return undefined;
  const preference: Preference = {};
  for (const part of (Array.isArray(header) ? header.join(',') : header).split(/[,;]/)) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const name = part.slice(0, at).trim().toLowerCase();
    const value = part
      .slice(at + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1');
    if (name === 'code') preference.code = value;
    else if (name === 'example') preference.example = value;
    else if (name === 'dynamic') preference.dynamic = value.toLowerCase() === 'true';
  }
  return Object.keys(preference).length > 0 ? preference : undefined;
}

interface MediaObject {
  schema?: SchemaObject;
  example?: unknown;
  examples?: Record<string, { value?: unknown }>;
}

interface ResponseObject {
  content?: Record<string, MediaObject>;
  headers?: Record<string, { required?: boolean; schema?: SchemaObject; example?: unknown }>;
}

function responsesOf(operation: Operation): Record<string, ResponseObject> {
  return (operation.responses ?? {}) as Record<string, ResponseObject>;
}

/** The JSON media type of a response (`application/json`, `application/problem+json`), if it has one. */
function jsonMedia(response: ResponseObject): [string, MediaObject] | undefined {
  return Object.entries(response.content ?? {}).find(([type]) => /^application\/([\w.+-]*\+)?json$/i.test(type));
}

/** The named examples of a media type: its `examples`, and its single `example` as `default`. */
function examplesOf(media: MediaObject): Record<string, unknown> {
  const named: Record<string, unknown> = {};
  if (media.example !== undefined) named.default = media.example;
  for (const [name, example] of Object.entries(media.examples ?? {})) named[name] = example.value;
  return named;
}

/**
 * The documented response a `Prefer` header picks, made without running the handler: the status is
 * `code` (else the operation's first success), the body its named example, its example, or one made
 * from the schema (`dynamic=true`: always made, with random values). An undocumented code or
 * unknown example name is the client's error (400 in the API's own shape), naming what exists.
 */
export function preferredReply(operation: Operation, preference: Preference): RestReply {
  const responses = responsesOf(operation);
  const codes = Object.keys(responses);
  const code = preference.code ?? codes.filter((candidate) => /^2/.test(candidate)).sort()[0] ?? codes[0];
  const response = code === undefined ? undefined : responses[code];
  if (code === undefined || response === undefined || !/^\d{3}$/.test(code)) {
    throw new AppError(
      'invalid_argument',
      `Prefer: code=${preference.code} is not a documented response of ${operation.operationId}; it documents ${codes.join(', ')}`,
      {
        violations: [{ field: 'header.prefer', message: `code must be one of ${codes.join(', ')}` }],
      },
    );
  }
  const status = Number(code);
  const applied = [`code=${code}`];
  const headers: Record<string, string> = {};
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    if (!header.required) continue;
    headers[name.toLowerCase()] = String(header.example ?? (header.schema ? sampleOf(header.schema, false) : ''));
  }
  const json = jsonMedia(response);
  if (!json) {
    const [type, media] = Object.entries(response.content ?? {})[0] ?? [];
    if (!type || !media) return { status, headers: withApplied(headers, applied) };
    // A non-JSON body (a page, raw bytes): its example as text, or nothing.
    const text = typeof media.example === 'string' ? media.example : '';
    return { status, headers: withApplied(headers, applied), body: Buffer.from(text), contentType: type };
  }
  const [contentType, media] = json;
  const examples = examplesOf(media);
  let body: unknown;
  if (preference.example !== undefined) {
    if (!(preference.example in examples)) {
      const names = Object.keys(examples);
      throw new AppError(
        'invalid_argument',
        `Prefer: example=${preference.example} is not an example of ${operation.operationId} ${code}; it has ${names.length > 0 ? names.join(', ') : 'none (use dynamic=true)'}`,
        { violations: [{ field: 'header.prefer', message: `example must be one of: ${names.join(', ')}` }] },
      );
    }
    body = examples[preference.example];
    applied.push(`example=${preference.example}`);
  } else if (preference.dynamic) {
    body = sampleOf(media.schema ?? {}, true);
    applied.push('dynamic=true');
  } else {
    body = Object.keys(examples).length > 0 ? Object.values(examples)[0] : sampleOf(media.schema ?? {}, false);
  }
  return { status, headers: withApplied(headers, applied), body, contentType: contentType === 'application/json' ? undefined : contentType };
}

/** RFC 7240 `Preference-Applied`: what the answer honoured. */
function withApplied(headers: Record<string, string>, applied: string[]): Record<string, string> {
  return { ...headers, 'preference-applied': applied.join(', ') };
}

/** A response outside its contract: logged, and answered as a 500 naming the operation. */
class ContractViolation extends Error {
  override name = 'ContractViolation';

  constructor(
    readonly operationId: string,
    readonly status: number,
    readonly problems: string[],
  ) {
    super(`${operationId} answered ${status} outside its contract: ${problems.join('; ')}`);
  }
}

/**
 * Checks answers against the OpenAPI document they belong to: a documented status, and a JSON body
 * valid against that status's schema (whatever its JSON media type: `application/problem+json` too,
 * which openapi-backend's own response validation skips). Validators are compiled on first use.
 */
export class ResponseChecker {
  private readonly ajv = addFormats.default(new Ajv({ strict: false, allErrors: true, discriminator: true }));
  private readonly compiled = new Map<string, ValidateFunction | null>();

  /** The problems of an answer; empty when it keeps the contract. */
  problems(operation: Operation, reply: RestReply): string[] {
    const responses = responsesOf(operation);
    const response = responses[String(reply.status)] ?? responses.default;
    if (!response) return [`status ${reply.status} is not documented (${Object.keys(responses).join(', ')})`];
    if (reply.body === undefined || Buffer.isBuffer(reply.body)) return [];
    const key = `${operation.operationId} ${reply.status}`;
    let validate = this.compiled.get(key);
    if (validate === undefined) {
      const schema = jsonMedia(response)?.[1].schema;
      validate = schema ? this.ajv.compile(schema) : null;
      this.compiled.set(key, validate);
    }
    if (!validate) return jsonMedia(response) || !response.content ? [] : ['a JSON body where the contract documents another media type'];
    // The body as it goes on the wire (dates as strings, no undefined members).
    if (validate(JSON.parse(JSON.stringify(reply.body)))) return [];
    return (validate.errors ?? []).map((error) => `body${error.instancePath} ${error.message ?? 'is invalid'}`);
  }
}

export interface SandboxRestOptions {
  checker: ResponseChecker;
  /** Told about every answer outside its contract (the sandbox logs it). */
  onViolation(violation: ContractViolation, requestId: string): void;
}

/**
 * The sandbox's handler for one operation: with a `Prefer` header, the documented answer it asks
 * for (the handler does not run); otherwise the handler's own answer — or error, rendered in the
 * API's shape — checked against the contract, a violation answered as a 500 naming the operation.
 */
export function sandboxHandler(
  operation: Operation,
  handler: CallHandler,
  renderError: RestApiOptions['renderError'],
  options: SandboxRestOptions,
): CallHandler {
  const checked = async (streamed: RestReply, call: RestCall): Promise<RestReply> => {
    const reply = await materialized(streamed);
    const problems = options.checker.problems(operation, reply);
    if (problems.length === 0) return reply;
    options.onViolation(new ContractViolation(operation.operationId ?? '', reply.status, problems), call.requestId);
    // The API's own 500, its sentence naming the operation (the generic one would hide what happened).
    const failure = renderError(new AppError('internal', 'Internal Server Error'));
    const sentence = `Sandbox: ${operation.operationId} answered ${reply.status} outside its contract (${problems[0]}); the server log has the details.`;
    const body = failure.body as Record<string, unknown> | undefined;
    for (const field of ['message', 'detail']) if (body && field in body) body[field] = sentence;
    return failure;
  };
  return async (call) => {
    const preference = preferenceOf(call.headers.prefer);
    if (preference) {
      let reply: RestReply;
      try {
        reply = preferredReply(operation, preference);
      } catch (error) {
        if (error instanceof AppError) return renderError(error);
        throw error;
      }
      return await checked(reply, call);
    }
    let reply: RestReply;
    try {
      reply = await handler(call);
    } catch (error) {
      // Server faults keep their usual path (logged with the request id, a generic 500).
      if (!(error instanceof AppError) || error.code === 'internal' || error.code === 'unavailable') throw error;
      reply = renderError(error);
    }
    return await checked(reply, call);
  };
}

/**
 * A reply whose body is produced as the client reads it (an inspector page), read whole here so that
 * it can be checked like any other: the sandbox trades that bound for the check (it serves one team).
 */
async function materialized(reply: RestReply): Promise<RestReply> {
  if (!(reply.body instanceof StreamedJson)) return reply;
  let text = '';
  try {
    for await (const chunk of reply.body.chunks) text += chunk;
  } finally {
    reply.body.done();
  }
  return { ...reply, body: JSON.parse(text) as unknown };
}
