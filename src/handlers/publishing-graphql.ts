import { readFileSync } from 'node:fs';
import DataLoader from 'dataloader';
import { buildSchema, GraphQLError, isObjectType, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import type { ArticleInput as GraphqlArticleInput, Resolvers } from '../../generated/graphql/publishing.js';
import { AppError, HTTP_STATUS, publicMessage, toAppError } from '../errors.js';
import { jsonReply, type GraphqlReply } from '../http/graphql-http.js';
import type { PublishingServices } from '../services/publishing/index.js';
import type { PublishingCaller } from '../services/publishing/rules.js';
import type { ArticleInput, Topic, Writer } from '../services/publishing/types.js';

/** What every resolver of one request sees: the signed-in caller, the services and per-request loaders. */
export interface PublishingGraphqlContext {
  caller: PublishingCaller;
  services: PublishingServices;
  /** Batch loaders: every author and topic an operation touches is read in one query each. */
  loaders: { writers: DataLoader<string, Writer | null>; topics: DataLoader<string, Topic | null> };
  /** The caller as a writer, read once per request however many times (aliases) `me` is asked for. */
  me(): Promise<Writer>;
  [key: PropertyKey]: unknown;
}

/** A fresh context per request, so loader caches never outlive one operation or leak between callers. */
export function publishingGraphqlContext(caller: PublishingCaller, services: PublishingServices): PublishingGraphqlContext {
  let me: Promise<Writer> | undefined;
  return {
    caller,
    services,
    me: () => (me ??= services.writers.me(caller)),
    loaders: {
      writers: new DataLoader((ids: readonly string[]) => services.writers.getMany(caller, ids)),
      topics: new DataLoader((ids: readonly string[]) => services.topics.getMany(ids)),
    },
  };
}

/** Resolvers typed from the SDL; each one calls the same service as its REST handler. */
const publishingResolvers: Resolvers<PublishingGraphqlContext> = {
  Query: {
    articles: (_root, { filters, ...paging }, { caller, services }) => services.articles.list(caller, filters ?? {}, paging),
    article: (_root, { id }, { caller, services }) => orNull(services.articles.get(caller, id)),
    writers: (_root, paging, { caller, services }) => services.writers.list(caller, paging),
    writer: (_root, { id }, { loaders }) => loaders.writers.load(id),
    topics: (_root, paging, { services }) => services.topics.list(paging),
    me: (_root, _args, { me }) => me(),
  },
  Mutation: {
    createArticle: (_root, { input }, { caller, services }) => services.articles.create(caller, articleInputOf(input)),
    updateArticle: (_root, { id, input }, { caller, services }) => services.articles.update(caller, id, articleInputOf(input)),
    deleteArticle: async (_root, { id }, { caller, services }) => {
      await services.articles.remove(caller, id);
      return id;
    },
    publishArticle: (_root, { id }, { caller, services }) => services.articles.publish(caller, id),
    createTopic: (_root, { input }, { caller, services }) => services.topics.create(caller, input),
  },
  Article: {
    author: async (article, _args, { loaders }) => {
      const author = await loaders.writers.load(article.author);
      if (!author) throw new AppError('internal', `article ${article._id} has no visible author`);
      return author;
    },
    topic: (article, _args, { loaders }) => (article.topic === null ? null : loaders.topics.load(article.topic)),
  },
};

/**
 * The estimated cost of the fields that read or write the store (every other field costs 1), for
 * the cost limit: each is at least one round trip, and aliases repeat it. Article.author and
 * Article.topic are batched by the loaders, so they stay at 1.
 */
export const PUBLISHING_STORE_FIELD_COST = 25;
export const PUBLISHING_FIELD_COSTS: Readonly<Record<string, number>> = Object.fromEntries(
  [
    ...Object.keys(publishingResolvers.Query ?? {}).map((name) => `Query.${name}`),
    ...Object.keys(publishingResolvers.Mutation ?? {}).map((name) => `Mutation.${name}`),
  ].map((key) => [key, PUBLISHING_STORE_FIELD_COST]),
);

/**
 * The executable schema: the SDL of contracts/graphql with the resolvers above, attached field by
 * field with graphql's own API (graphql-tools' current releases need Node 22.15; see docs/operations.md).
 * A resolver for a type or field the SDL lacks stops the start, as makeExecutableSchema did.
 */
export function publishingSchema(sdlPath: string): GraphQLSchema {
  const schema = buildSchema(readFileSync(sdlPath, 'utf8'));
  for (const [typeName, resolvers] of Object.entries(publishingResolvers)) {
    const type = schema.getType(typeName);
    if (!isObjectType(type)) throw new Error(`resolvers for ${typeName}, which the schema does not define as an object type`);
    const fields = type.getFields();
    for (const [fieldName, resolve] of Object.entries(resolvers ?? {})) {
      const field = fields[fieldName];
      if (!field || typeof resolve !== 'function') throw new Error(`no field ${typeName}.${fieldName} to resolve in the schema`);
      field.resolve = resolve as GraphQLFieldResolver<unknown, PublishingGraphqlContext>;
    }
  }
  return schema;
}

/**
 * Domain errors keep their meaning over GraphQL: `extensions.code` (e.g. FORBIDDEN), the HTTP status
 * REST would answer and, for invalid input, `extensions.errors` as `[{field, message}]`.
 * Anything unexpected is logged and answered as a generic internal error (`publicMessage`).
 */
export function formatPublishingError(error: GraphQLError, requestId: string, log: (error: unknown, requestId: string) => void): GraphQLError {
  const original = error.originalError;
  if (!original || original instanceof GraphQLError) return error;
  // The same classification as REST (e.g. an unreachable database is UNAVAILABLE / 503, not internal).
  const appError = toAppError(original);
  if (appError.code === 'internal') log(original, requestId);
  return new GraphQLError(publicMessage(appError), {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    extensions: extensionsOf(appError),
  });
}

/**
 * An error raised before execution (no valid token, a body over the limit, the store down, a fault)
 * as a GraphQL-over-HTTP answer: the HTTP status REST would give and `{errors: [{message, extensions}]}`.
 */
export function renderPublishingGraphqlError(error: AppError): GraphqlReply {
  const status = HTTP_STATUS[error.code];
  const headers: Record<string, string> = {};
  if (status === 401) headers['www-authenticate'] = 'Bearer';
  if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.retryAfterSeconds);
  return jsonReply(status, { errors: [{ message: publicMessage(error), extensions: extensionsOf(error) }] }, headers);
}

function extensionsOf(error: AppError): Record<string, unknown> {
  const extensions: Record<string, unknown> = { code: GRAPHQL_CODE[error.code] ?? error.code.toUpperCase(), status: HTTP_STATUS[error.code] };
  if (error.violations.length > 0) extensions.errors = error.violations;
  return extensions;
}

const GRAPHQL_CODE: Partial<Record<AppError['code'], string>> = {
  invalid_argument: 'BAD_USER_INPUT',
  unauthenticated: 'UNAUTHENTICATED',
  permission_denied: 'FORBIDDEN',
  not_found: 'NOT_FOUND',
  already_exists: 'CONFLICT',
  failed_precondition: 'CONFLICT',
  internal: 'INTERNAL_SERVER_ERROR',
};

/** GraphQL's optional input fields arrive as null; the service's input leaves them out. */
function articleInputOf(input: GraphqlArticleInput): ArticleInput {
  return {
    title: input.title,
    text: input.text,
    tags: input.tags ?? undefined,
    files: input.files?.map((file) => ({ url: file.url, fileType: file.fileType })) ?? undefined,
    topic: input.topic ?? null,
  };
}

/** A single-object query answers null for what the caller cannot see, as GraphQL clients expect. */
async function orNull<T>(result: Promise<T>): Promise<T | null> {
  try {
    return await result;
  } catch (error) {
    if (error instanceof AppError && error.code === 'not_found') return null;
    throw error;
  }
}
