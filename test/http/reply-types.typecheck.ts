/**
 * Type-level test, checked by `npm run typecheck` (tsconfig includes test/; jest does not run it):
 * REST handler replies and path/query parameters are typed from the contract's generated
 * `operations`, so each `@ts-expect-error` below marks a reply or a read the compiler refuses. If a
 * line stops being an error (the types got looser), tsc fails on the unused directive.
 */
import type { operations as Publishing } from '../../generated/openapi/publishing.js';
import type { operations as Users } from '../../generated/openapi/users.js';
import type { operations as Webhooks } from '../../generated/openapi/webhooks.js';
import type { OperationCall, ReplyOf, RestHandlers } from '../../src/http/rest-api.js';
import type { StreamedJson } from '../../src/http/streamed-json.js';

type Handlers = RestHandlers<Publishing>;
declare const call: OperationCall<Publishing['getArticle']>;
declare const article: ReplyOf<Publishing['getArticle']> extends infer Reply ? (Reply extends { body: infer Body } ? Body : never) : never;

export const accepted: Array<ReplyOf<Publishing['getArticle']> | ReplyOf<Publishing['deleteArticle']> | ReplyOf<Webhooks['getCapturedRequestBody']>> = [
  { status: 200, body: article },
  { status: 204 },
  { status: 200, body: Buffer.from('captured'), contentType: 'text/plain' },
];

export const wrongBody: Handlers['getArticle'] = () => ({
  status: 200,
  // @ts-expect-error a topic list is not the documented Article
  body: { items: [], total: 0, limit: 20, offset: 0 },
});

declare const inspection: StreamedJson<Webhooks['inspectRoute']['responses'][200]['content']['application/json']>;

/** A body produced as the client reads it is typed by the document it spells, like any JSON body. */
export const streamed: RestHandlers<Webhooks>['inspectRoute'] = () => ({ status: 200, body: inspection });

export const wrongStream: Handlers['getArticle'] = () => ({
  status: 200,
  // @ts-expect-error a stream of an Inspection is not the documented Article
  body: inspection,
});

export const missingField: Handlers['getArticle'] = () => ({
  status: 200,
  // @ts-expect-error an Article without its title is not an Article
  body: { ...article, title: undefined },
});

// @ts-expect-error getArticle documents no 201
export const undocumentedStatus: Handlers['getArticle'] = () => ({ status: 201, body: article });

// @ts-expect-error a 204 carries no body
export const bodyOnNoContent: Handlers['deleteArticle'] = () => ({ status: 204, body: article });

const notFound = { type: 'about:blank', title: 'Not Found', status: 404, detail: 'No such article.' };
// @ts-expect-error errors are thrown (AppError) and rendered as problem details, not returned
export const returnedError: Handlers['getArticle'] = () => ({ status: 404, body: notFound });

// @ts-expect-error the captured body is raw bytes with its own media type, not JSON
export const jsonForBytes: RestHandlers<Pick<Webhooks, 'getCapturedRequestBody'>>['getCapturedRequestBody'] = () => ({ status: 200, body: { hello: 'world' } });

// @ts-expect-error a user's profile is not the service info the operation documents
export const usersWrongBody: RestHandlers<Users>['getServiceInfo'] = () => ({ status: 200, body: { _id: 'x', name: 'ada' } });

export const pathParameter: string = call.params.id;
// @ts-expect-error getArticle's path parameter is `id`
export const unknownPathParameter: string = call.params.articleId;

declare const listCall: OperationCall<Publishing['listArticles']>;
export const limit: number | undefined = listCall.query.limit;
// @ts-expect-error `limit` is an integer after validation, not a string
export const limitAsText: string | undefined = listCall.query.limit;
// @ts-expect-error listArticles has no path parameters
export const noPathParameters: string = listCall.params.id;
