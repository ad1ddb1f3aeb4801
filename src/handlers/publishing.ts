import type { operations } from '../../generated/openapi/publishing.js';
import { AppError } from '../errors.js';
import type { RestCall, RestHandlers } from '../http/rest-api.js';
import { createLocalSignIn } from '../auth/local-sign-in.js';
import { presentedToken, type RequestHeaders } from '../auth/bearer-token.js';
import type { PublishingServices } from '../services/publishing/index.js';
import type { PublishingCaller } from '../services/publishing/rules.js';

/**
 * The one way `/v1` and `/graphql` authenticate a request: its presented token (`presentedToken`,
 * Bearer or `x-access-token`) resolved to a caller, or undefined when it presents none; a bad
 * credential is a 401. REST asks once per security scheme of the contract, so the answer is kept per
 * request (its headers object) and the token is checked once.
 */
export function publishingAuthenticator(writers: PublishingServices['writers']): (headers: RequestHeaders) => Promise<PublishingCaller | undefined> {
  const callers = new WeakMap<RequestHeaders, Promise<PublishingCaller | undefined>>();
  return (headers) => {
    let caller = callers.get(headers);
    if (!caller) {
      caller = Promise.resolve().then(() => writers.authenticate(presentedToken(headers, 'x-access-token')));
      callers.set(headers, caller);
    }
    return caller;
  };
}

/**
 * The caller of a request, from the results of the two security schemes: either scheme with a valid
 * token names the caller; no token at all is anonymous (an invalid one was refused with 401 already).
 */
function callerOf(call: RestCall<unknown, unknown, unknown>): PublishingCaller | undefined {
  const results = [call.security.bearerAuth, call.security.accessToken];
  return results.find((result): result is PublishingCaller => typeof result === 'object' && result !== null && 'role' in result);
}

/** Handlers of `contracts/openapi/publishing.yaml`, keyed by operationId: decode, call a service, encode. */
export function publishingApiHandlers({ writers, articles, topics }: PublishingServices): RestHandlers<operations> {
  const signIn = createLocalSignIn((email, password, address) => writers.login(email, password, address), { usernameField: 'email' });
  return {
    listArticles: async (call) => {
      const { limit, offset, after, ...filters } = call.query;
      return { status: 200, body: await articles.list(callerOf(call), filters, { limit, offset, after }) };
    },
    createArticle: async (call) => ({ status: 201, body: await articles.create(callerOf(call), call.body) }),
    getArticle: async (call) => ({ status: 200, body: await articles.get(callerOf(call), call.params.id) }),
    updateArticle: async (call) => ({
      status: 200,
      body: await articles.update(callerOf(call), call.params.id, call.body),
    }),
    deleteArticle: async (call) => {
      await articles.remove(callerOf(call), call.params.id);
      return { status: 204 };
    },
    publishArticle: async (call) => ({
      status: 200,
      body: await articles.publish(callerOf(call), call.params.id),
    }),
    listWriters: async (call) => ({
      status: 200,
      body: await writers.list(callerOf(call), call.query),
    }),
    createWriter: async (call) => ({ status: 201, body: await writers.create(callerOf(call), call.body) }),
    getWriter: async (call) => ({ status: 200, body: await writers.get(callerOf(call), call.params.id) }),
    login: async (call) => {
      const result = await signIn(call.body, call.remoteAddress);
      if (!result) throw new AppError('unauthenticated', 'Wrong email or password.');
      return { status: 200, body: result };
    },
    listTopics: async (call) => ({ status: 200, body: await topics.list(call.query) }),
    createTopic: async (call) => ({ status: 201, body: await topics.create(callerOf(call), call.body) }),
  };
}
