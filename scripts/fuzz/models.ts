/**
 * Per contract, what the stateful fuzzer (scripts/fuzz/stateful.ts) needs beyond the document's
 * links: who calls (a creator, a peer of equal or lower rank, a superior), which operations start a
 * sequence, and the few answers the product spec gives a deleted resource instead of 404.
 *
 * - users (SPEC §2): the admin creates ordinary users; another ordinary user is the peer (a user is
 *   visible only to admins and themself: 404 to anyone else).
 * - publishing (SPEC §3): writer A writes drafts; writer B is the peer (a draft is visible only to
 *   those who may edit it); the superuser publishes (then anyone may read it). A deleted article
 *   cannot be published: publishArticle answers 409 (documented). The same rules over GraphQL.
 * - webhooks (SPEC §4): routes are capability URLs with no principals, so only "gone after delete"
 *   applies (a route, and a captured request).
 */
import type { ExtraCheckContext, Principal, StatefulModel } from './stateful.js';

/** Server environment the models rely on (a first admin and a publishing superuser). */
export const STATEFUL_SERVER_ENV: Record<string, string> = {
  ADMIN_USERNAME: 'stateful-admin',
  ADMIN_PASSWORD: 'stateful-admin-password',
  SUPERUSER_EMAIL: 'stateful-root@example.com',
  SUPERUSER_PASSWORD: 'stateful-root-password',
  // Sequences sign in as the users they make, some of them deleted meanwhile: no throttling in the way.
  SIGNIN_MAX_FAILURES: '1000',
};

async function json(url: string, method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

async function expect(what: string, promise: Promise<{ status: number; body: Record<string, unknown> }>, want: number): Promise<Record<string, unknown>> {
  const got = await promise;
  if (got.status !== want) throw new Error(`stateful fixture: ${what} answered ${got.status}: ${JSON.stringify(got.body)}`);
  return got.body;
}

const users: StatefulModel = {
  contract: 'users',
  async setup(url) {
    const admin = await expect(
      'admin sign-in',
      json(url, 'POST', '/api/auth', { name: STATEFUL_SERVER_ENV.ADMIN_USERNAME, password: STATEFUL_SERVER_ENV.ADMIN_PASSWORD }),
      200,
    );
    const adminToken = String(admin.accessToken);
    const peer = { name: 'stateful-peer', password: 'stateful-peer-password' };
    const created = await json(url, 'POST', '/api/users', { ...peer, isAdmin: false }, adminToken);
    // 409: an earlier run against the same server made it.
    if (created.status !== 200 && created.status !== 409) throw new Error(`stateful fixture: creating the peer user answered ${created.status}`);
    const signedIn = await expect('peer sign-in', json(url, 'POST', '/api/auth', peer), 200);
    const adminPrincipal: Principal = { name: 'the admin', token: adminToken };
    return {
      creator: adminPrincipal,
      superior: adminPrincipal,
      peer: { name: 'an ordinary user', token: String(signedIn.accessToken) },
      patch(operationId, body) {
        // The resource is an ordinary user: the peer (also ordinary) is of equal rank.
        if (operationId === 'createUser' && body && typeof body === 'object') return { ...body, isAdmin: false };
        return body;
      },
    };
  },
  producers: [{ operationId: 'createUser', private: true }],
};

interface GraphqlAnswer {
  status: number;
  body: { data?: Record<string, unknown> | null; errors?: Array<{ message: string; extensions?: { code?: string } }> };
}

async function graphql(url: string, token: string | undefined, query: string, variables: Record<string, unknown>): Promise<GraphqlAnswer> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) as GraphqlAnswer['body'] };
  } catch {
    return { status: response.status, body: { errors: [{ message: `not JSON: ${text.slice(0, 200)}` }] } };
  }
}

const ARTICLE_CALLS: Array<{ name: string; query: string; field: string }> = [
  { name: 'article', query: 'query ($id: ID!) { article(id: $id) { _id } }', field: 'article' },
  {
    name: 'updateArticle',
    query: 'mutation ($id: ID!) { updateArticle(id: $id, input: { title: "Stateful", text: "Changed by the fuzzer." }) { _id } }',
    field: 'updateArticle',
  },
  { name: 'deleteArticle', query: 'mutation ($id: ID!) { deleteArticle(id: $id) }', field: 'deleteArticle' },
  { name: 'publishArticle', query: 'mutation ($id: ID!) { publishArticle(id: $id) { _id } }', field: 'publishArticle' },
];

/** Each GraphQL call on the article must find nothing: `article` is null, a mutation fails with one of `codes`. */
async function articleInvisible(context: ExtraCheckContext, codes: Record<string, string[]>): Promise<string[]> {
  const problems: string[] = [];
  for (const call of ARTICLE_CALLS) {
    const answer = await graphql(context.url, context.principal.token, call.query, { id: context.id });
    const value = answer.body.data?.[call.field];
    const code = answer.body.errors?.[0]?.extensions?.code;
    if (answer.status >= 500) problems.push(`GraphQL ${call.name} answered ${answer.status}`);
    else if (value !== null && value !== undefined) problems.push(`GraphQL ${call.name} answered ${JSON.stringify(value)}`);
    else if (call.name !== 'article' && !(codes[call.name] ?? []).includes(code ?? '')) {
      problems.push(
        `GraphQL ${call.name} failed with ${code ?? 'no code'} (${answer.body.errors?.[0]?.message ?? ''}), not ${(codes[call.name] ?? []).join(' or ')}`,
      );
    }
  }
  return problems;
}

const publishing: StatefulModel = {
  contract: 'publishing',
  async setup(url) {
    const login = await expect(
      'superuser login',
      json(url, 'POST', '/v1/writers/login', { email: STATEFUL_SERVER_ENV.SUPERUSER_EMAIL, password: STATEFUL_SERVER_ENV.SUPERUSER_PASSWORD }),
      200,
    );
    const root = String(login.accessToken);
    const topic = await expect('creating a topic', json(url, 'POST', '/v1/topics', { title: `Stateful fuzzing ${Date.now()}` }, root), 201);
    const writer = async (email: string): Promise<string> => {
      const created = await json(url, 'POST', '/v1/writers', { email, password: 'stateful-writer-pw', name: email, role: 'writer' }, root);
      if (created.status !== 201 && created.status !== 409) throw new Error(`stateful fixture: creating ${email} answered ${created.status}`);
      return String((await expect(`${email} login`, json(url, 'POST', '/v1/writers/login', { email, password: 'stateful-writer-pw' }), 200)).accessToken);
    };
    const writerA = await writer('writer-a@stateful.example');
    const writerB = await writer('writer-b@stateful.example');
    return {
      creator: { name: 'writer A', token: writerA },
      peer: { name: 'writer B', token: writerB },
      superior: { name: 'the superuser', token: root },
      patch(operationId, body) {
        if ((operationId === 'createArticle' || operationId === 'updateArticle') && body && typeof body === 'object') {
          return { ...body, topic: String(topic._id) };
        }
        return body;
      },
    };
  },
  producers: [
    { operationId: 'createArticle', private: true },
    { operationId: 'createArticle', private: true },
    { operationId: 'createWriter', private: false, as: 'superior' },
    { operationId: 'createTopic', private: false, as: 'superior' },
  ],
  afterDelete: { publishArticle: [409] },
  publishes: ['publishArticle'],
  peerCheck: (context) =>
    articleInvisible(context, {
      updateArticle: ['NOT_FOUND', 'FORBIDDEN'],
      deleteArticle: ['NOT_FOUND', 'FORBIDDEN'],
      publishArticle: ['NOT_FOUND', 'FORBIDDEN'],
    }),
  deletedCheck: (context) =>
    articleInvisible(context, {
      updateArticle: ['NOT_FOUND'],
      deleteArticle: ['NOT_FOUND'],
      // A writer may not publish at all (a role refusal); the superuser must be told it is gone.
      publishArticle: ['NOT_FOUND', 'CONFLICT', ...(context.superior ? [] : ['FORBIDDEN'])],
    }),
};

const webhooks: StatefulModel = {
  contract: 'webhooks',
  setup() {
    const anyone: Principal = { name: 'anyone' };
    return Promise.resolve({
      creator: anyone,
      superior: anyone,
      patch(operationId, body) {
        // A route may be told to answer 5xx and to wait; the 5xx is its configured answer, not a fault.
        const response =
          operationId === 'createRoute' && body && typeof body === 'object'
            ? (body as { response?: { status?: number; delayMs?: number } }).response
            : undefined;
        if (response?.status !== undefined && response.status >= 500) response.status = 202;
        if (response?.delayMs !== undefined) response.delayMs = Math.min(response.delayMs, 20);
        return body;
      },
    });
  },
  producers: [{ operationId: 'createRoute', private: false }],
};

export const STATEFUL_MODELS: StatefulModel[] = [users, publishing, webhooks];
