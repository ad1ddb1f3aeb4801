import type { TestServer, TestResponse } from '../../support/app.js';

export const SUPERUSER = { email: 'root@example.com', password: 'root-password-1' };

/** The six kinds of caller the role matrix walks. */
export type Who = 'anonymous' | 'reader' | 'writer' | 'otherWriter' | 'editor' | 'superuser';
export const EVERYONE: Who[] = ['anonymous', 'reader', 'writer', 'otherWriter', 'editor', 'superuser'];

export interface Actors {
  tokens: Record<Exclude<Who, 'anonymous'>, string>;
  ids: Record<Exclude<Who, 'anonymous'>, string>;
}

/** Signs in the configured superuser and creates one user of each other kind. */
export async function createActors(server: TestServer): Promise<Actors> {
  const root = await login(server, SUPERUSER.email, SUPERUSER.password);
  const tokens = { superuser: root.body.accessToken } as Actors['tokens'];
  const ids = { superuser: root.body.user._id } as Actors['ids'];
  const people: Array<[Exclude<Who, 'anonymous' | 'superuser'>, string]> = [
    ['reader', 'reader'],
    ['writer', 'writer'],
    ['otherWriter', 'writer'],
    ['editor', 'editor'],
  ];
  for (const [who, role] of people) {
    const email = `${who.toLowerCase()}@example.com`;
    const created = await server.request('POST', '/v1/writers', { token: tokens.superuser, body: { email, password: 'password-123', name: who, role } });
    if (created.status !== 201) throw new Error(`creating ${who}: ${created.text}`);
    const signedIn = await login(server, email, 'password-123');
    tokens[who] = signedIn.body.accessToken;
    ids[who] = signedIn.body.user._id;
  }
  return { tokens, ids };
}

export function login(server: TestServer, email: string, password: string): Promise<TestResponse> {
  return server.request('POST', '/v1/writers/login', { body: { email, password } });
}

export function tokenOf(actors: Actors, who: Who): string | undefined {
  return who === 'anonymous' ? undefined : actors.tokens[who];
}

/** Runs a GraphQL operation over POST as `token`. */
export async function graphql(server: TestServer, token: string | undefined, query: string, variables?: Record<string, unknown>) {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(`${server.url}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}
