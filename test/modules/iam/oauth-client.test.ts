import * as oauth from 'oauth4webapi';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { TOKEN_ISSUER } from '../../../src/auth/token-service.js';
import { GRANT_TYPE_TOKEN_EXCHANGE } from '../../../src/services/iam/token-exchange.js';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { TokenExchangeService } from '../../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import { expectGrpcError } from '../../support/grpc.js';
import { startCloudServer, type CloudServer } from '../cloud/fixtures.js';
import { createProject, createServiceAccountWithKey, exchangeForm, exchangeRequest, jwtOf, type ServiceAccountKey } from './support.js';

// The HTTP token exchange through oauth4webapi, a standard OAuth 2.0 client nobody here wrote
// (issue 19 §3): discovery from the RFC 8414 metadata, the RFC 8693 grant, and every error it can
// meet parsed the way the RFCs define them (RFC 6749 §5.2: all 400; RFC 8693 §2.2.2 invalid_target).

let cloud: CloudServer;
let robot: ServiceAccountKey;
let issuer: URL;
let as: oauth.AuthorizationServer;
const client: oauth.Client = { client_id: 'cfs-test' };

beforeAll(async () => {
  cloud = await startCloudServer({ PRINCIPAL_CACHE_MS: '0' });
  const project = await createProject(cloud.grpc, cloud.admin.token, 'oauth-clients');
  robot = await createServiceAccountWithKey(cloud.grpc, cloud.admin.token, project, 'oauth-robot');
  issuer = new URL(cloud.server.url);
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true });
  as = await oauth.processDiscoveryResponse(issuer, response);
});
afterAll(async () => {
  await cloud?.close();
});

/** The exchange as oauth4webapi sends it (client_id in the body, no client authentication). */
function exchange(parameters: Record<string, string> | string[][]): Promise<Response> {
  return oauth.genericTokenEndpointRequest(as, client, oauth.None(), GRANT_TYPE_TOKEN_EXCHANGE, parameters, { [oauth.allowInsecureRequests]: true });
}

/** The form of an exchange without its grant_type (oauth4webapi sets that one). */
function formOf(jwt: string, extra: string[][] = []): string[][] {
  const { grant_type: _grantType, ...rest } = exchangeForm(jwt);
  return [...Object.entries(rest), ...extra];
}

test('discovery finds the RFC 8414 metadata of the serving origin, cacheable', async () => {
  expect(as).toMatchObject({
    issuer: issuer.origin,
    token_endpoint: `${issuer.origin}/oauth2/token/exchange`,
    jwks_uri: `${issuer.origin}/.well-known/jwks.json`,
    grant_types_supported: [GRANT_TYPE_TOKEN_EXCHANGE],
    token_endpoint_auth_methods_supported: ['none'],
  });
  const response = await fetch(`${issuer.origin}/.well-known/oauth-authorization-server`);
  expect(response.headers.get('cache-control')).toBe('public, max-age=3600');
  expect((await fetch(`${issuer.origin}/.well-known/oauth-authorization-server`, { method: 'POST' })).status).toBe(405);
});

// Without TRUST_PROXY nobody's X-Forwarded-Proto is believed; with it, see test/hardening/trusted-proxies.test.ts.
test('the metadata follows the host the client used, not an untrusted X-Forwarded-Proto', async () => {
  const { request } = await import('node:http');
  const body = await new Promise<string>((resolve, reject) => {
    const req = request(
      `${issuer.origin}/.well-known/oauth-authorization-server`,
      { headers: { host: 'api.example.test:8443', 'x-forwarded-proto': 'https' } },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => resolve(text));
      },
    );
    req.on('error', reject);
    req.end();
  });
  expect(JSON.parse(body)).toMatchObject({ issuer: 'http://api.example.test:8443', token_endpoint: 'http://api.example.test:8443/oauth2/token/exchange' });
});

test('a valid service-account JWT buys a Bearer access token that verifies against the advertised JWKS', async () => {
  const result = await oauth.processGenericTokenEndpointResponse(as, client, await exchange(formOf(jwtOf(robot))));
  expect(result).toMatchObject({ token_type: 'bearer', issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', expires_in: expect.any(Number) });
  const keys = createRemoteJWKSet(new URL(as.jwks_uri!));
  const { payload } = await jwtVerify(result.access_token, keys, { issuer: TOKEN_ISSUER });
  expect(payload.sub).toBe(robot.serviceAccountId);
});

test('audience and resource naming this server are accepted (its origin, a service name, a URL on its origin)', async () => {
  const extra = [
    ['audience', issuer.origin],
    ['audience', 'compute'],
    ['resource', `${issuer.origin}/cloud.compute.v1.InstanceService/List`],
    ['scope', 'anything'],
  ];
  const result = await oauth.processGenericTokenEndpointResponse(as, client, await exchange(formOf(jwtOf(robot), extra)));
  expect(result.access_token).toEqual(expect.any(String));
});

test('the JWKS is cacheable and revalidates with its ETag', async () => {
  const first = await fetch(as.jwks_uri!);
  expect(first.headers.get('cache-control')).toBe('public, max-age=300');
  const etag = first.headers.get('etag');
  expect(etag).toBeTruthy();
  const again = await fetch(as.jwks_uri!, { headers: { 'if-none-match': etag! } });
  expect(again.status).toBe(304);
});

const ERRORS: [string, { given: () => string[][]; want: string }][] = [
  ['a garbage JWT', { given: () => formOf('not.a.jwt'), want: 'invalid_grant' }],
  ['a JWT signed for an unknown key', { given: () => formOf(jwtOf({ ...robot, keyId: 'publickey-00000000000000000000' })), want: 'invalid_grant' }],
  ['an expired JWT', { given: () => formOf(jwtOf(robot, -600)), want: 'invalid_grant' }],
  ['a JWT that lives longer than an hour', { given: () => formOf(jwtOf(robot, 7200)), want: 'invalid_grant' }],
  ['no subject_token', { given: () => formOf('').filter(([name]) => name !== 'subject_token'), want: 'invalid_request' }],
  [
    'another subject_token_type',
    {
      given: () => formOf(jwtOf(robot)).map(([name, value]) => [name!, name === 'subject_token_type' ? 'urn:ietf:params:oauth:token-type:id_token' : value!]),
      want: 'invalid_request',
    },
  ],
  [
    'an unsupported requested_token_type',
    {
      given: () =>
        formOf(jwtOf(robot)).map(([name, value]) => [name!, name === 'requested_token_type' ? 'urn:ietf:params:oauth:token-type:refresh_token' : value!]),
      want: 'invalid_request',
    },
  ],
  [
    'an actor token',
    {
      given: () =>
        formOf(jwtOf(robot), [
          ['actor_token', 'x'],
          ['actor_token_type', 'urn:ietf:params:oauth:token-type:jwt'],
        ]),
      want: 'invalid_request',
    },
  ],
  ['an audience of another service', { given: () => formOf(jwtOf(robot), [['audience', 'https://elsewhere.example']]), want: 'invalid_target' }],
  ['a resource on another origin', { given: () => formOf(jwtOf(robot), [['resource', 'https://elsewhere.example/api']]), want: 'invalid_target' }],
  [
    'a resource that is not an absolute URI',
    { given: () => formOf(jwtOf(robot), [['resource', '/cloud.compute.v1.InstanceService/List']]), want: 'invalid_target' },
  ],
  ['a resource with a fragment', { given: () => formOf(jwtOf(robot), [['resource', `${issuer.origin}/x#frag`]]), want: 'invalid_target' }],
  [
    'one acceptable audience and one not',
    {
      given: () =>
        formOf(jwtOf(robot), [
          ['audience', 'compute'],
          ['audience', 'billing'],
        ]),
      want: 'invalid_target',
    },
  ],
];

test.each(ERRORS)('%s: oauth4webapi reports the RFC error from a 400', async (_name, { given, want }) => {
  const response = await exchange(given());
  const error = await oauth.processGenericTokenEndpointResponse(as, client, response).then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(oauth.ResponseBodyError);
  expect(error).toMatchObject({ status: 400, error: want, error_description: expect.any(String) });
  expect(response.headers.get('cache-control')).toBe('no-store');
});

test('another grant type is unsupported_grant_type', async () => {
  const response = await oauth.genericTokenEndpointRequest(as, client, oauth.None(), 'client_credentials', {}, { [oauth.allowInsecureRequests]: true });
  await expect(oauth.processGenericTokenEndpointResponse(as, client, response)).rejects.toMatchObject({ status: 400, error: 'unsupported_grant_type' });
});

test('over gRPC the same target rule holds for `audience`: a service name passes, another audience is INVALID_ARGUMENT', async () => {
  const { message } = await cloud.grpc.call(TokenExchangeService.method.exchange, { ...exchangeRequest(jwtOf(robot)), audience: 'compute' });
  expect(message.accessToken).toEqual(expect.any(String));
  const error = await expectGrpcError(cloud.grpc.call(TokenExchangeService.method.exchange, { ...exchangeRequest(jwtOf(robot)), audience: 'billing' }));
  expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
  expect(error.serviceError?.details).toMatchObject({ case: 'badRequest', value: { violations: [{ field: 'audience' }] } });
});
