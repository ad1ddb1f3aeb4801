import http from 'node:http';
import { expectMatchesContract, type RequestOptions, type TestResponse, type TestServer } from '../../support/app.js';

export const ADMIN = { name: 'root', password: 'root-password-1' };

export const DEFAULT_SETTINGS = {
  autoplayTrailers: true,
  language: 'en',
  animationDuration: 300,
  seriesmanager: { apiKey: '', baseUrl: '', qualityProfileId: 0, rootFolderPath: '', languageProfileId: 0 },
  moviemanager: { apiKey: '', baseUrl: '', qualityProfileId: 0, rootFolderPath: '' },
  mediaserver: { apiKey: '', baseUrl: '', userId: '' },
  metadatadb: { sessionId: '', userId: '' },
};

export const CUSTOM_SETTINGS = {
  autoplayTrailers: false,
  language: 'de',
  animationDuration: 150,
  seriesmanager: { apiKey: 'abc', baseUrl: 'http://series.local', qualityProfileId: 1, rootFolderPath: '/tv', languageProfileId: 2 },
  moviemanager: { apiKey: 'def', baseUrl: 'http://movies.local', qualityProfileId: 3, rootFolderPath: '/movies' },
  mediaserver: { apiKey: 'ghi', baseUrl: 'http://media.local', userId: 'u1' },
  metadatadb: { sessionId: 's1', userId: 'm1' },
};

export interface Account {
  id: string;
  name: string;
  password: string;
  token: string;
}

/**
 * Sends a contract-checked request and also checks what no user response may ever carry: a
 * password field or an argon2 hash.
 */
export async function call(server: TestServer, method: string, path: string, options?: RequestOptions): Promise<TestResponse> {
  const response = await server.request(method, path, options);
  expect(response.text).not.toMatch(/\$argon2/);
  expect(response.text).not.toMatch(/"password(_hash|Hash)?"\s*:/);
  return response;
}

/** Signs in, expecting success. */
export async function signIn(server: TestServer, name: string, password: string): Promise<Account> {
  const response = await call(server, 'POST', '/api/auth', { body: { name, password } });
  expect(response.status).toBe(200);
  return { id: response.body.user.id, name, password, token: response.body.accessToken };
}

/** The first sign-in on an empty database creates the admin. */
export function bootstrapAdmin(server: TestServer): Promise<Account> {
  return signIn(server, ADMIN.name, ADMIN.password);
}

/** Creates a user as `admin` and signs them in. */
export async function createAccount(
  server: TestServer,
  admin: Account,
  name: string,
  options: { isAdmin?: boolean; password?: string } = {},
): Promise<Account> {
  const password = options.password ?? `${name}-password`;
  const created = await call(server, 'POST', '/api/users', { token: admin.token, body: { name, password, isAdmin: options.isAdmin ?? false } });
  expect(created.status).toBe(200);
  return signIn(server, name, password);
}

/**
 * Sends a request from a chosen loopback address (127.0.0.0/8 all reach a server bound to
 * 127.0.0.1), so per-address rules can be tested without touching the address the rest use.
 */
export function requestFrom(server: TestServer, localAddress: string, method: string, path: string, body: unknown): Promise<TestResponse> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: server.port,
        method,
        path,
        localAddress,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') headers.set(name, value);
          const result: TestResponse = { status: res.statusCode ?? 0, headers, text, body: text ? JSON.parse(text) : text };
          try {
            expectMatchesContract(server.app, method, path, result);
            resolve(result);
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
