import { OpenAPIBackend, type Operation } from 'openapi-backend';
import { AppError, toAppError } from '../errors.js';
import { findUnsafeNumber } from '../engines/json-numbers/index.js';
import { DEFAULT_BODY_LIMIT_BYTES, readBody } from './body.js';
import { loadContractDocument } from './contract-documents.js';
import { CONTRACT_AJV_OPTIONS, violationsOf, withContractFormats } from './contract-rules.js';
import { clientOf } from './request-client.js';
import { sendReply, type NodeRequest, type NodeResponse, type RestReply } from './reply.js';
import { StreamedJson } from './streamed-json.js';
import type { ResolvedClient } from '../services/client-address.js';
import { ContractRefusal } from './rest-engine/contract-refusal.js';
import { normalizePath, operationMatcher, requestPartsOf } from './rest-engine/matcher.js';
import { createAuthenticator, type SecurityVerifiers } from './rest-engine/security.js';
import { onlyPathInvalid, rejectNulCharacters, validateParameters, withoutUnknownParameters } from './rest-engine/validator.js';

/** What a handler sees: the request as the contract's validator left it (types coerced, path params parsed). */
export interface RestCall<Body = unknown, Params = Record<string, string>, Query = Record<string, unknown>> {
  operationId: string;
  params: Params;
  query: Query;
  body: Body;
  headers: NodeRequest['headers'];
  /** The client's address, through trusted proxies (`TRUST_PROXY`); empty when unknown. */
  remoteAddress: string;
  /** How the client was found: the address, the trusted proxies in between, whether their headers are believed. */
  client: ResolvedClient;
  requestId: string;
  /** Results of the contract's security handlers that accepted the request, by scheme name. */
  security: Record<string, unknown>;
}

export type RestHandler = (call: RestCall<never, never, never>) => Promise<RestReply> | RestReply;

/**
 * Statuses a handler answers itself; every other documented status (4xx, 5xx) is an error the handler
 * throws and the API's renderer shapes.
 */
type AnsweredStatus = 200 | 201 | 202 | 204 | 301 | 302 | 303 | 307 | 308;

/** The body a documented response carries: its JSON schema's type, raw bytes for another media type, or none. */
type ReplyBody<Response> = Response extends { content: { 'application/json': infer Body } }
  ? { body: Body | StreamedJson<Body>; contentType?: string }
  : Response extends { content: Record<string, unknown> }
    ? { body: Buffer; contentType: string }
    : { body?: undefined; contentType?: undefined };

/**
 * The replies the contract allows for one operation of an openapi-typescript `operations` interface
 * (generated/openapi/*.ts): one per documented answered status, each with that status's body type,
 * so `npm run typecheck` refuses a handler whose reply does not match its documented response.
 */
export type ReplyOf<Operation> = Operation extends { responses: infer Responses }
  ? { [Status in keyof Responses & AnsweredStatus]: { status: Status; headers?: Record<string, string> } & ReplyBody<Responses[Status]> }[keyof Responses &
      AnsweredStatus]
  : never;

/** Path parameters of an operation as the contract types them (none: an empty record). */
export type PathParamsOf<Operation> = Operation extends { parameters: { path: infer Path } } ? Path : Record<string, never>;

/** Query parameters of an operation as the contract types them, after the validator's coercion. */
export type QueryOf<Operation> = Operation extends { parameters: { query?: infer Query } }
  ? [NonNullable<Query>] extends [never]
    ? Record<string, never>
    : NonNullable<Query>
  : Record<string, never>;

/** The JSON request body of an operation; `undefined` where it takes none or the body is optional and absent. */
export type JsonRequestBody<Operation> = Operation extends { requestBody: { content: { 'application/json': infer Body } } }
  ? Body
  : Operation extends { requestBody?: { content: { 'application/json': infer Body } } }
    ? Body | undefined
    : undefined;

/** What the handler of one operation sees: body, path and query typed from the contract. */
export type OperationCall<Operation> = RestCall<JsonRequestBody<Operation>, PathParamsOf<Operation>, QueryOf<Operation>>;

/**
 * The handlers of one contract, keyed by operationId (every operation of `Operations` must have one),
 * each typed from its operation: what it reads and what it may answer.
 */
export type RestHandlers<Operations> = {
  [OperationId in keyof Operations]: (
    call: OperationCall<Operations[OperationId]>,
  ) => Promise<ReplyOf<Operations[OperationId]>> | ReplyOf<Operations[OperationId]>;
};

export interface RestApiOptions {
  /** Path of the OpenAPI document in `contracts/openapi`. */
  contractPath: string;
  handlers: Record<string, RestHandler>;
  /** Renders a domain error in this API's own error shape. */
  renderError(error: AppError): RestReply;
  /** Headers every response of this API carries (e.g. `Deprecation`). */
  commonHeaders?: Record<string, string>;
  /**
   * One verifier per security scheme of the contract. It answers the principal, or undefined when the
   * request carries no credentials for it; operations whose requirements nobody meets answer 401, and
   * a verifier that throws (credentials present but invalid) refuses the request with 401 too. They
   * run before validation, so an anonymous caller learns nothing about inputs.
   */
  securityHandlers?: SecurityVerifiers;
  bodyLimitBytes?: number;
  onError?(error: unknown, requestId: string): void;
  /**
   * GET operations with a side effect (a GET that creates something). Every other GET operation
   * answers HEAD too; these do not, so a HEAD (link checkers, proxies) never runs them.
   */
  unsafeGets?: string[];
}

export interface RestApi {
  /** The contract engine; tests use `api.validateResponse` against it. */
  api: OpenAPIBackend;
  /**
   * The operation a request would reach, by the very matcher `handle` uses (tests and the fuzzer ask
   * it which operation documents an answer); undefined when none.
   */
  match(method: string, path: string): Operation | undefined;
  /** Answers a request (the reply is written when ready; nothing rejects) and returns its route template, for the request log. */
  handle(req: NodeRequest, res: NodeResponse, requestId: string): string;
  /** Sandbox mode only (src/sandbox): replaces each operation's handler by what `wrap` makes of it. */
  wrapHandlers(wrap: (operation: Operation, handler: CallHandler, renderError: RestApiOptions['renderError']) => CallHandler): void;
}

/** A handler as the engine calls it, after security and validation. */
export type CallHandler = (call: RestCall) => Promise<RestReply> | RestReply;

/**
 * Serves one OpenAPI document straight over node:http with openapi-backend (strict): its router
 * matches the operation, the contract's security requirements are checked, its ajv validators check
 * parameters and body (types coerced), and the handler registered under the operationId answers.
 * The steps are openapi-backend's own, called once each: its `handleRequest` parsed every request
 * four times (lodash, qs, cookie, a path regex compiled per call), the largest cost per request in
 * the profile (docs/architecture.md). Returns the matched route template, for the request log.
 */
export async function createRestApi(options: RestApiOptions): Promise<RestApi> {
  const limit = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const api = new OpenAPIBackend({
    // Read once per process (shared with the contracts module) and validated against the OpenAPI 3
    // meta-schema unless the build already did that for this very text (contract-documents.ts).
    definition: loadContractDocument(options.contractPath).document,
    strict: true,
    // Quick mode skips openapi-backend's own document validation (done by the loader above) and
    // defers compiling validators.
    quick: true,
    coerceTypes: true,
    ajvOpts: CONTRACT_AJV_OPTIONS,
    customizeAjv: withContractFormats,
  });
  // Validators compile on first use of their operation (a few ms once): compiling all of them up
  // front was most of the server's start-up time, and every operation's validators are exercised by
  // the contract tests.
  await api.init();
  // Strict mode refuses a handler whose operationId the document does not have.
  const handlers = new Map<string, CallHandler>();
  for (const [operationId, handler] of Object.entries(options.handlers)) {
    api.register(operationId, handler as never);
    handlers.set(operationId, handler as CallHandler);
  }
  // The router re-flattens the document (with lodash) on every match; the operations never change.
  const operations = api.router.getOperations();
  api.router.getOperations = () => operations;
  const templates = new Map(operations.map((operation) => [operation.operationId, operation.path]));
  const declaredQuery = new Map(
    operations.map((operation) => [
      operation.operationId,
      new Set((operation.parameters ?? []).flatMap((parameter) => ('in' in parameter && parameter.in === 'query' ? [parameter.name] : []))),
    ]),
  );
  const unsafeGets = new Set(options.unsafeGets);
  const match = operationMatcher(operations);
  const requestParts = new Map(operations.map((operation) => [operation.operationId, requestPartsOf(operation)]));
  const authenticate = createAuthenticator(operations, options.securityHandlers ?? {});

  /**
   * Answers one request and returns its route template at once: the reply is written when it is
   * ready, and nothing here rejects (every failure becomes the API's own error reply). A request
   * without a body to read, with a cached token, goes through without a promise of the engine's
   * own: the handler's promise is the only one (docs/architecture.md, REST step table).
   */
  function handle(req: NodeRequest, res: NodeResponse, requestId: string): string {
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt === -1 ? url : url.slice(0, queryAt);
    // HEAD is a GET without the body (RFC 9110 §9.3.2): the GET operation runs with its security
    // and validation, and its status and headers (Content-Length included) are sent.
    const head = req.method === 'HEAD';
    const method = head ? 'GET' : (req.method ?? 'GET');
    const call: RestCall = {
      operationId: '',
      params: {},
      query: {},
      body: undefined,
      headers: req.headers,
      remoteAddress: '',
      client: clientOf(req),
      requestId,
      security: {},
    };
    call.remoteAddress = call.client.address ?? '';
    const send = (reply: RestReply) => {
      try {
        // A streamed body fails after its head was sent: the response is cut, the cause logged.
        const onStreamError = reply.body instanceof StreamedJson ? (error: unknown) => options.onError?.(error, requestId) : undefined;
        sendReply(res, reply, options.commonHeaders, head, onStreamError);
      } catch (error) {
        // A reply that cannot be written (a body JSON cannot encode): a generic 500, the cause logged.
        options.onError?.(error, requestId);
        if (!res.headersSent) sendReply(res, options.renderError(new AppError('internal', 'Internal Server Error')), options.commonHeaders, head);
      }
    };
    const fail = (error: unknown) => send(errorReply(error, requestId));
    let reply: RestReply | Promise<RestReply>;
    try {
      const normalizedPath = normalizePath(path);
      const operation = match(method, normalizedPath);
      if (!operation || (head && unsafeGets.has(operation.operationId ?? ''))) throw new ContractRefusal('not_found');
      call.operationId = operation.operationId ?? '';
      const query = queryAt === -1 ? '' : withoutUnknownParameters(url.slice(queryAt + 1), declaredQuery.get(call.operationId));
      // An operation that takes no body ignores one (a DELETE with a body is not a client error).
      const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';
      const target: RequestTarget = { operation, method, path, normalizedPath, query };
      if (operation.requestBody || hasBody) {
        const body = operation.requestBody ? readJsonBody(req, limit) : readBody(req, limit).then(() => undefined);
        reply = body.then((value) => authorized(target, call, value));
      } else reply = authorized(target, call, undefined);
    } catch (error) {
      reply = errorReply(error, requestId);
    }
    if (reply instanceof Promise) reply.then(send, fail);
    else send(reply);
    return (call.operationId && templates.get(call.operationId)) || 'unmatched';
  }

  /** The contract's security, then validation and the handler: a promise only where a step has one. */
  function authorized(target: RequestTarget, call: RestCall, body: unknown): RestReply | Promise<RestReply> {
    const security = authenticate(target.operation, call.headers);
    if (!(security instanceof Promise)) {
      call.security = security;
      return validatedCall(target, call, body);
    }
    return security.then((results) => {
      call.security = results;
      return validatedCall(target, call, body);
    });
  }

  /** Validation against the contract, then the operation's handler (the caller already passed security). */
  function validatedCall({ operation, method, path, normalizedPath, query }: RequestTarget, call: RestCall, body: unknown): RestReply | Promise<RestReply> {
    const parts = requestParts.get(call.operationId);
    // openapi-backend's validateRequest re-parses the request (lodash, qs, cookie, a path template
    // compiled per call); a request with no query string and no body, to an operation with no
    // header or cookie parameters, gets the very object it would build, from precompiled parts.
    const validation =
      parts && query === '' && body === undefined && !parts.headerOrCookieParameters
        ? validateParameters(api, operation, parts.pathParameters(normalizedPath) ?? {}, call.headers)
        : api.validator.validateRequest({ method, path, query, headers: call.headers as Record<string, string>, body }, operation);
    if (validation.errors) {
      if (onlyPathInvalid(validation.errors, operation)) throw new ContractRefusal('not_found');
      throw new ContractRefusal('invalid_argument', { violations: violationsOf(validation.errors) });
    }
    call.params = (validation.coerced?.params ?? {}) as Record<string, string>;
    call.query = (validation.coerced?.query ?? {}) as Record<string, unknown>;
    call.body = body;
    rejectNulCharacters(call, operation);
    const handler = handlers.get(call.operationId);
    if (!handler) throw new AppError('internal', `no handler for ${call.operationId}`);
    return handler(call);
  }

  /** A failure in this API's own error shape; unexpected ones are logged with the request id. */
  function errorReply(error: unknown, requestId: string): RestReply {
    // openapi-backend decodes path and query with decodeURIComponent: bad percent-encoding is the client's error.
    const appError =
      error instanceof URIError
        ? new ContractRefusal('invalid_argument', { violations: [{ field: 'path', message: 'is not valid percent-encoding' }] })
        : toAppError(error);
    if (appError.code === 'internal') options.onError?.(error, requestId);
    return options.renderError(appError);
  }

  function wrapHandlers(wrap: Parameters<RestApi['wrapHandlers']>[0]): void {
    for (const [operationId, handler] of handlers) handlers.set(operationId, wrap(api.router.getOperation(operationId)!, handler, options.renderError));
  }

  /** The operation `handle` serves for a request line (HEAD reaches the GET operation unless that one is unsafe). */
  function matchRequest(method: string, path: string): Operation | undefined {
    const head = method.toUpperCase() === 'HEAD';
    const operation = match(head ? 'GET' : method, normalizePath(path));
    return operation && head && unsafeGets.has(operation.operationId ?? '') ? undefined : operation;
  }

  return { api, match: matchRequest, handle, wrapHandlers };
}

/** What one request asks for: the matched operation and the request line as the validator reads it. */
interface RequestTarget {
  operation: Operation;
  method: string;
  path: string;
  normalizedPath: string;
  /** The query string with undeclared parameters dropped. */
  query: string;
}

async function readJsonBody(req: NodeRequest, limit: number): Promise<unknown> {
  const method = req.method ?? 'GET';
  if (method === 'GET' || method === 'HEAD' || method === 'DELETE') {
    if (!req.headers['content-length'] && !req.headers['transfer-encoding']) return undefined;
  }
  const bytes = await readBody(req, limit);
  if (bytes.length === 0) return undefined;
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/([\w.+-]*\+)?json\b/i.test(type)) {
    throw new ContractRefusal('invalid_argument', { violations: [{ field: 'body', message: 'must be application/json' }] });
  }
  const text = bytes.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ContractRefusal('invalid_argument', { violations: [{ field: 'body', message: 'is not valid JSON' }] });
  }
  // JSON.parse turns 1e999 into Infinity (stored as null) and rounds integers beyond 2^53: refused, naming the field.
  const unsafe = findUnsafeNumber(text);
  if (unsafe) throw new ContractRefusal('invalid_argument', { violations: [{ field: unsafe.path || 'body', message: unsafe.message }] });
  return parsed;
}
