import { STATUS_CODES } from 'node:http';
import type { operations } from '../../generated/openapi/users.js';
import { AppError, HTTP_STATUS, publicMessage } from '../errors.js';
import type { RestCall, RestHandlers } from '../http/rest-api.js';
import type { RestReply } from '../http/reply.js';
import { createLocalSignIn } from '../auth/local-sign-in.js';
import type { AccountCaller, UserService } from '../services/user-service.js';
import { firstRunClaimOf } from '../services/first-run.js';

/**
 * The users API's error body (docs/users-api.md): `{statusCode, message, error}`; 401 keeps its two-field form. It is
 * also the shape of the server's own routes that no contract describes (health, key set, the 404).
 */
export function renderUserApiError(error: AppError): RestReply {
  const status = HTTP_STATUS[error.code];
  const reason = STATUS_CODES[status] ?? 'Error';
  const message = publicMessage(error) || reason;
  const body: Record<string, unknown> = status === 401 ? { statusCode: 401, message: 'Unauthorized' } : { statusCode: status, message, error: reason };
  if (status === 400 && error.violations.length > 0) body.details = error.violations;
  const headers: Record<string, string> = {};
  if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.retryAfterSeconds);
  return { status, body, headers };
}

/** Handlers of `contracts/openapi/users.yaml`, keyed by operationId: decode, call the service, encode. */
export function userApiHandlers(users: UserService, serviceName: string): RestHandlers<operations> {
  const signIn = createLocalSignIn((name, password, call: RestCall<unknown>) =>
    users.signIn(name, password, call.remoteAddress, firstRunClaimOf(call.client, call.headers)),
  );
  const caller = (call: RestCall<unknown>): AccountCaller => {
    const principal = call.security.bearerAuth as AccountCaller | undefined;
    if (!principal) throw new AppError('unauthenticated', 'Unauthorized');
    return principal;
  };
  return {
    getServiceInfo: () => ({ status: 200, body: { name: serviceName, version: '1.0.0' } }),
    signIn: async (call) => {
      const result = await signIn(call.body, call);
      if (!result) throw new AppError('unauthenticated', 'Unauthorized');
      return { status: 200, body: result };
    },
    listUsers: async (call) => {
      const page = await users.list(caller(call), { limit: call.query.limit, after: call.query.after });
      // RFC 8288: a URI reference relative to the request, so it holds behind any proxy or host name.
      const next = page.next && `</api/users?limit=${page.limit}&after=${page.next}>; rel="next"`;
      return { status: 200, body: page.users, ...(next ? { headers: { link: next } } : {}) };
    },
    createUser: async (call) => {
      const principal = call.security.bearerAuth as AccountCaller | undefined;
      return { status: 200, body: await users.create(principal, call.body, firstRunClaimOf(call.client, call.headers)) };
    },
    getUser: (call) => users.get(caller(call), call.params.id).then((body) => ({ status: 200, body })),
    updateUser: async (call) => ({
      status: 200,
      body: await users.update(caller(call), call.params.id, call.body),
    }),
    deleteUser: async (call) => {
      await users.remove(caller(call), call.params.id);
      return { status: 200 };
    },
  };
}
