import { createPrivateKey, sign } from 'node:crypto';
import { TOKEN_ISSUER } from '../../src/auth/token-service.js';
import { signServiceAccountJwt } from '../../src/engines/service-account-jwt/index.js';
import { startCloudServer, type CloudServer } from '../modules/cloud/fixtures.js';
import { createProject, createServiceAccountWithKey, exchangeForm, exchangeOverHttp, type ServiceAccountKey } from '../modules/iam/support.js';

/**
 * Issue 10 item 12 through the real server: bearer tokens and service-account JWTs that differ from a
 * valid one only by a future nbf, a foreign iss, or a non-canonical spelling of the same signature.
 */
let cloud: CloudServer;
let robot: ServiceAccountKey;
let serverKey: { kid: string; pem: string };
beforeAll(async () => {
  cloud = await startCloudServer();
  robot = await createServiceAccountWithKey(cloud.grpc, cloud.admin.token, await createProject(cloud.grpc, cloud.admin.token, 'jwt-hardening'), 'robot');
  const row = (await cloud.server.app.db.knex('signing_keys').whereNull('retired_at').orderBy('created_at', 'desc').first()) as {
    kid: string;
    private_key_pem: string;
  };
  serverKey = { kid: row.kid, pem: row.private_key_pem };
});
afterAll(async () => {
  await cloud?.close();
});

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** Same bytes, last character's unused low bit set (Ed25519 and RSA-2048 signatures both leave 4 such bits). */
const withTrailingBit = (token: string) => token.slice(0, -1) + ALPHABET[ALPHABET.indexOf(token.at(-1) ?? 'A') ^ 1];

/** A bearer token signed with the server's own key: only the claim and form checks can refuse it. */
function bearer(claims: Record<string, unknown>): string {
  const input = `${b64({ alg: 'EdDSA', typ: 'JWT', kid: serverKey.kid })}.${b64(claims)}`;
  return `${input}.${sign(null, Buffer.from(input), createPrivateKey(serverKey.pem)).toString('base64url')}`;
}
const adminClaims = () => ({ sub: cloud.admin.id, aud: 'account', iss: TOKEN_ISSUER, iat: now(), exp: now() + 600 });

/** A service-account JWT with extra or replaced claims, signed with the account's key. */
function accountJwt(claims: Record<string, unknown> = {}): string {
  const input = `${b64({ alg: 'RS256', typ: 'JWT', kid: robot.keyId })}.${b64({ iss: robot.serviceAccountId, sub: robot.serviceAccountId, iat: now(), exp: now() + 300, ...claims })}`;
  return `${input}.${sign('RSA-SHA256', Buffer.from(input), createPrivateKey(robot.privateKey)).toString('base64url')}`;
}

const BEARER: Array<[string, { given: () => string; want: number }]> = [
  ['valid claims (the control)', { given: () => bearer(adminClaims()), want: 200 }],
  ['a future nbf', { given: () => bearer({ ...adminClaims(), nbf: now() + 600 }), want: 401 }],
  ['a foreign iss', { given: () => bearer({ ...adminClaims(), iss: 'https://issuer.example' }), want: 401 }],
  ['no iss', { given: () => bearer({ ...adminClaims(), iss: undefined }), want: 401 }],
  ['its signature with a trailing bit altered', { given: () => withTrailingBit(cloud.admin.token), want: 401 }],
  ['its signature padded', { given: () => `${cloud.admin.token}==`, want: 401 }],
];

test.each(BEARER)('GET /api/users with a bearer token carrying %s', async (_name, { given, want }) => {
  const response = await cloud.server.request('GET', '/api/users', { token: given() });
  expect(response.status).toBe(want);
  if (want === 401) expect(response.body).toEqual({ statusCode: 401, message: 'Unauthorized' });
});

const EXCHANGE: Array<[string, { given: () => string; want: number }]> = [
  ['valid claims (the control)', { given: () => accountJwt(), want: 200 }],
  ['a future nbf', { given: () => accountJwt({ nbf: now() + 600 }), want: 400 }],
  ['a foreign iss', { given: () => accountJwt({ iss: 'serviceaccount-someone-else' }), want: 400 }],
  ['its signature with a trailing bit altered', { given: () => withTrailingBit(signServiceAccountJwt(robot)), want: 400 }],
  ['its signature padded', { given: () => `${signServiceAccountJwt(robot)}==`, want: 400 }],
];

test.each(EXCHANGE)('POST /oauth2/token/exchange with a JWT carrying %s', async (_name, { given, want }) => {
  const response = await exchangeOverHttp(cloud.server.url, exchangeForm(given()));
  expect(response.status).toBe(want);
  if (want === 400) expect(response.body).toEqual({ error: 'invalid_grant', error_description: expect.any(String) });
});
