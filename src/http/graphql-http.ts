import { createHandler, type OperationContext } from 'graphql-http';
import { GraphQLError, Lexer, parse, Source, TokenKind, type GraphQLSchema, type ValidationRule } from 'graphql';
import { AppError, toAppError } from '../errors.js';
import { findUnsafeNumber } from '../engines/json-numbers/index.js';
import { readBody } from './body.js';
import { sendReply, type NodeRequest, type NodeResponse, type RestReply } from './reply.js';

export interface GraphqlHttpOptions<Context extends OperationContext> {
  schema: GraphQLSchema;
  /** Builds the per-request context (caller, loaders); throws an AppError to refuse the request (e.g. 401). */
  context(req: NodeRequest, requestId: string): Promise<Context>;
  /**
   * Renders an error raised before execution (the context refused, the body is too large, the store
   * is down, a fault) in this API's shape; execution errors go through `formatError`.
   */
  renderError(error: AppError): GraphqlReply;
  validationRules: readonly ValidationRule[];
  /** Shapes an execution error for the client (domain codes in `extensions`, 500s generic). */
  formatError(error: GraphQLError, requestId: string): GraphQLError;
  bodyLimitBytes?: number;
  /**
   * The most lexical tokens a query may have: the parser stops there, so a huge query is refused
   * before it is parsed, validated (some of graphql's own rules are quadratic in the number of
   * fields) or run. Default 5000 (the standard introspection query has ~250).
   */
  maxTokens?: number;
  onError?(error: unknown, requestId: string): void;
}

export interface GraphqlReply {
  status: number;
  body: string;
  headers: Record<string, string>;
}

/**
 * Serves one GraphQL schema per the GraphQL-over-HTTP spec (GET for queries, POST for queries and
 * mutations) through graphql-http's server-agnostic handler, straight over node:http, so it works on
 * HTTP/1.1 and HTTP/2 alike and reads bodies with the server's size limit.
 */
export function createGraphqlHttp<Context extends OperationContext>(options: GraphqlHttpOptions<Context>) {
  const limit = options.bodyLimitBytes ?? 1024 * 1024;
  const maxTokens = options.maxTokens ?? 5000;
  const handler = createHandler<NodeRequest, { requestId: string; context: Context }, Context>({
    schema: options.schema,
    context: (req) => req.context.context,
    validationRules: options.validationRules,
    parse: (source) => parseWithin(source, maxTokens),
    // Execution errors are shaped here, where the request id is known (for the log of a 500).
    onOperation: (req, _args, result) =>
      result.errors ? { ...result, errors: result.errors.map((error) => options.formatError(error, req.context.requestId)) } : result,
  });

  return async function handle(req: NodeRequest, res: NodeResponse, requestId: string): Promise<void> {
    let reply: GraphqlReply;
    try {
      const context = await options.context(req, requestId);
      let body = '';
      if (req.method === 'POST') body = (await readBody(req, limit)).toString('utf8');
      refuseUnsafeNumbers(req.method === 'POST' ? body : variablesOfQuery(req.url));
      const [responseBody, init] = await handler({
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers as Record<string, string | string[] | undefined>,
        body,
        raw: req,
        context: { requestId, context },
      });
      reply = { status: init.status, body: responseBody ?? '', headers: { ...(init.headers as Record<string, string>) } };
    } catch (error) {
      const appError = toAppError(error);
      if (appError.code === 'internal') options.onError?.(error, requestId);
      reply = options.renderError(appError);
    }
    sendReply(res, restReplyOf(reply), undefined, req.method === 'HEAD');
  };
}

/** A GraphQL-over-HTTP answer as the one reply writer takes it (its JSON text as bytes, with its type). */
export function restReplyOf(reply: GraphqlReply): RestReply {
  const { 'content-type': contentType, ...headers } = reply.headers;
  return { status: reply.status, body: Buffer.from(reply.body), headers, contentType };
}

/**
 * Variables with a number JSON.parse would not keep (`1e999`, an integer beyond 2^53) are refused
 * with 400 naming the variable, before graphql-http parses the request.
 */
function refuseUnsafeNumbers(json: string | undefined): void {
  if (!json) return;
  const unsafe = findUnsafeNumber(json);
  if (!unsafe) return;
  const field = unsafe.path.replace(/^variables\.?/, '') || 'variables';
  throw new AppError('invalid_argument', `Variable "${field}" ${unsafe.message}.`, { violations: [{ field, message: unsafe.message }] });
}

/** The `variables` parameter of a GET request, as the JSON text of an object (`{"variables": …}`), or undefined. */
function variablesOfQuery(url: string | undefined): string | undefined {
  const query = url?.split('?', 2)[1];
  if (!query) return undefined;
  const variables = new URLSearchParams(query).get('variables');
  return variables === null ? undefined : `{"variables":${variables}}`;
}

/**
 * graphql's parser with a token cap. Its error for the cap is a plain syntax error; it is answered as
 * QUERY_TOO_LARGE, which says what to change. Which syntax error it was is told by counting the
 * tokens again (only on failure, and at most the cap), not by reading graphql's wording.
 */
function parseWithin(source: Parameters<typeof parse>[0], maxTokens: number): ReturnType<typeof parse> {
  try {
    return parse(source, { maxTokens });
  } catch (error) {
    if (error instanceof GraphQLError && hasMoreTokens(source, maxTokens)) {
      throw new GraphQLError(`The query has more than ${maxTokens} tokens; at most ${maxTokens} are allowed.`, { extensions: { code: 'QUERY_TOO_LARGE' } });
    }
    throw error;
  }
}

/** Whether the source has more than `maxTokens` tokens before its end or its first lexical error, as the parser counts them. */
function hasMoreTokens(source: Parameters<typeof parse>[0], maxTokens: number): boolean {
  const lexer = new Lexer(typeof source === 'string' ? new Source(source) : source);
  try {
    for (let count = 0; count <= maxTokens; count += 1) {
      if (lexer.advance().kind === TokenKind.EOF) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/** A JSON reply in the GraphQL response shape (`{errors: […]}`), for answers given before execution. */
export function jsonReply(status: number, body: unknown, headers: Record<string, string> = {}): GraphqlReply {
  return { status, body: JSON.stringify(body), headers: { 'content-type': 'application/json; charset=utf-8', ...headers } };
}
