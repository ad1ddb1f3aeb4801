import { create, toBinary } from '@bufbuild/protobuf';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { GetInstanceRequestSchema, InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { encodeGrpcMessage } from '../../src/server/grpc-message.js';
import { expectGrpcError, GrpcTestClient } from '../support/grpc.js';
import { createInstance, startCloudServer, type CloudServer } from '../modules/cloud/fixtures.js';

// grpc-message is percent-encoded exactly as the gRPC spec asks (PROTOCOL-HTTP2.md, Status-Message):
// bytes outside 0x20–0x7E and `%`, nothing else; @grpc/grpc-js decodes with decodeURI, so anything
// more (`:` → %3A) reached its users as written.

describe('encodeGrpcMessage', () => {
  const table: [string, { given: string; want: string }][] = [
    [
      'printable ASCII passes as it is, `:`, `,`, `#` and spaces included',
      { given: 'Authorization: Bearer <token>, #1 (a/b?c=d&e)', want: 'Authorization: Bearer <token>, #1 (a/b?c=d&e)' },
    ],
    ['`%` is encoded', { given: '100% sure', want: '100%25 sure' }],
    ['control bytes are encoded', { given: 'a\tb\r\nc\u007f', want: 'a%09b%0D%0Ac%7F' }],
    ['non-ASCII is encoded as its UTF-8 bytes', { given: 'near "\u20DE("', want: 'near "%E2%83%9E("' }],
    ['the empty message stays empty', { given: '', want: '' }],
  ];
  test.each(table)('%s', (_name, { given, want }) => {
    expect(encodeGrpcMessage(given)).toBe(want);
    expect(decodeURIComponent(encodeGrpcMessage(given))).toBe(given);
  });
});

let cloud: CloudServer;
let gzipClient: GrpcTestClient | undefined;
beforeAll(async () => {
  cloud = await startCloudServer({ COMPUTE_WORK_MS: '5' });
  gzipClient = new GrpcTestClient(cloud.server.url, { 'grpc.default_compression_algorithm': 2 });
});
afterAll(async () => {
  gzipClient?.close();
  await cloud?.close();
});

const M = InstanceService.method;
// A message with `:`, a space, quotes, `%` and a non-ASCII character (U+20DE, the reference's position mark).
const MASK = 'spec.%';
const MESSAGE = 'X-ResetMask: tokenizer failure: failed to tokenize: unexpected symbol at position 5 near "spec.\u20DE%"';

describe.each([
  ['the native gRPC path', () => cloud.grpc],
  ["connect-node's gRPC (gzip)", () => gzipClient!],
])('grpc-js shows the message as the server wrote it, on %s', (_path, client) => {
  test('a missing bearer token', async () => {
    const error = await expectGrpcError(client().call(M.get, { id: 'instance-none' }));
    expect(error.code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect(error.details).toBe('a bearer token is required (Authorization: Bearer <token>)');
  });

  test('a malformed reset mask', async () => {
    const instance = await createInstance(cloud, `msg-${Math.random().toString(36).slice(2, 8)}`, {}, 'project-masks');
    const error = await expectGrpcError(
      client().call(M.update, { metadata: { id: instance.metadata?.id ?? '' } }, { token: cloud.admin.token, headers: { 'x-resetmask': MASK } }),
    );
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(error.details).toBe(MESSAGE);
  });
});

test('gRPC-Web carries the same spelling in its trailer envelope', async () => {
  const message = toBinary(GetInstanceRequestSchema, create(GetInstanceRequestSchema, { id: 'instance-none' }));
  const body = Buffer.alloc(5 + message.length);
  body.writeUInt32BE(message.length, 1);
  body.set(message, 5);
  const response = await fetch(`${cloud.server.url}/${InstanceService.typeName}/Get`, {
    method: 'POST',
    headers: { 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1' },
    body,
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  expect(bytes[0]).toBe(0x80);
  const trailer = bytes.subarray(5, 5 + bytes.readUInt32BE(1)).toString('latin1');
  expect(trailer).toContain('grpc-message: a bearer token is required (Authorization: Bearer <token>)\r\n');
});
