import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { AnySchema } from '@bufbuild/protobuf/wkt';
import { pino } from 'pino';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { AuthPublicKeyService } from '../../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { ProfileService } from '../../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { TokenExchangeService } from '../../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import { ServiceAccountService } from '../../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { build, type App } from '../../../src/server/build.js';
import { loadConfig } from '../../../src/config.js';
import { openTestDatabase } from '../../support/app.js';
import { GrpcTestClient, expectGrpcError } from '../../support/grpc.js';
import { createProject, createServiceAccountWithKey, exchangeForm, exchangeOverHttp, exchangeRequest, jwtOf } from './support.js';

/**
 * A whole service-account flow with the log captured at the most verbose level and no redaction
 * configured: private keys, JWTs and access tokens must appear in no log line, no stored
 * Operation, and no response but the one that issues them.
 */
const lines: string[] = [];
let app: App;
let url: string;
let grpc: GrpcTestClient;
let drop: () => Promise<void>;

beforeAll(async () => {
  const database = await openTestDatabase();
  drop = database.drop;
  const config = loadConfig({ MIGRATE: 'false', LOG_LEVEL: 'trace', ADMIN_USERNAME: 'operator', ADMIN_PASSWORD: 'operator-password', COMPUTE_WORK_MS: '5' });
  const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
  app = await build(config, { database: database.db, logger });
  url = `http://127.0.0.1:${await app.listen(0, '127.0.0.1')}`;
  grpc = new GrpcTestClient(url);
});
afterAll(async () => {
  grpc?.close();
  await app?.close();
  await drop?.();
});

/** Distinctive pieces of a secret: the whole, and slices that survive escaping or line wrapping. */
function piecesOf(secret: string): string[] {
  const flat = secret.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
  return [secret, ...secret.split('.').filter((part) => part.length > 20), flat.slice(100, 160), flat.slice(-120, -60)].filter((piece) => piece.length > 0);
}

test('no private key, JWT or access token is logged, stored in an Operation, or answered twice', async () => {
  const signIn = await fetch(`${url}/api/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'operator', password: 'operator-password' }),
  });
  const admin = ((await signIn.json()) as { accessToken: string }).accessToken;
  const project = await createProject(grpc, admin, 'secrets');
  const key = await createServiceAccountWithKey(grpc, admin, project, 'secret-keeper');
  const jwtGrpc = jwtOf(key);
  const jwtHttp = jwtOf(key);
  const { message: exchanged } = await grpc.call(TokenExchangeService.method.exchange, exchangeRequest(jwtGrpc), { token: admin });
  const overHttp = await exchangeOverHttp(url, exchangeForm(jwtHttp));
  expect(overHttp.status).toBe(200);
  const httpToken = overHttp.body.access_token as string;
  // Refusals log why, never what: an expired JWT and a tampered one.
  const expired = jwtOf(key, -600);
  expect((await exchangeOverHttp(url, exchangeForm(expired))).status).toBe(400);
  const tampered = `${jwtGrpc.slice(0, -4)}AAAA`;
  await expectGrpcError(grpc.call(TokenExchangeService.method.exchange, exchangeRequest(tampered)));
  await expectGrpcError(grpc.call(ProfileService.method.get, {}, { token: `${exchanged.accessToken}x` }));

  // The service account works with both tokens; its calls produce operations and log lines.
  const { message: created } = await grpc.call(
    InstanceService.method.create,
    { metadata: { parentId: project, name: 'vm' }, spec: { cloudInitUserData: 'password: hunter2-secret' } },
    { token: exchanged.accessToken },
  );
  await grpc.call(ProfileService.method.get, {}, { token: httpToken });
  await grpc.call(ServiceAccountService.method.update, { metadata: { id: key.serviceAccountId }, spec: { description: 'rotating' } }, { token: httpToken });

  // Later reads of the key and of every operation never carry the private key.
  const answers: unknown[] = [];
  answers.push((await grpc.call(AuthPublicKeyService.method.get, { id: key.keyId }, { token: admin })).message);
  answers.push((await grpc.call(AuthPublicKeyService.method.list, { parentId: project }, { token: admin })).message);
  for (const resourceId of [key.keyId, key.serviceAccountId, created.resourceId]) {
    answers.push((await grpc.call(OperationService.method.list, { resourceId }, { token: admin })).message);
  }
  const later = JSON.stringify(answers, (_key, value: unknown) =>
    typeof value === 'bigint' ? String(value) : value instanceof Uint8Array ? Buffer.from(value).toString('latin1') : value,
  );

  const stored = await app.db.knex('operations').select('request', 'request_headers', 'description');
  const requests = stored.map((row: { request: Uint8Array; request_headers: unknown; description: string }) => {
    const any = fromBinary(AnySchema, new Uint8Array(Buffer.from(row.request)));
    return `${row.description} ${JSON.stringify(row.request_headers)} ${Buffer.from(toBinary(AnySchema, any)).toString('latin1')}`;
  });
  expect(requests.some((request) => request.startsWith('Generate public key'))).toBe(true);
  const operations = requests.join('\n');

  const log = lines.join('');
  const requestLines = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request');
  expect(requestLines).toEqual(expect.arrayContaining([expect.objectContaining({ route: '/oauth2/token/exchange', status: 200 })]));
  expect(log).toContain('token exchange refused');
  expect(log).toContain('the JWT has expired');

  const secrets = [key.privateKey, jwtGrpc, jwtHttp, expired, tampered, exchanged.accessToken, httpToken, 'hunter2-secret'];
  for (const secret of secrets) {
    for (const piece of piecesOf(secret)) {
      expect(log).not.toContain(piece);
      expect(operations).not.toContain(piece);
      expect(later).not.toContain(piece);
    }
  }
  expect(log).not.toContain('PRIVATE KEY');
  expect(operations).not.toContain('PRIVATE KEY');
  expect(later).not.toContain('PRIVATE KEY');
});
