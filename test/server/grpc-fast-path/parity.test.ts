import http2 from 'node:http2';
import { randomUUID } from 'node:crypto';
import { create, toBinary } from '@bufbuild/protobuf';
import { GetInstanceRequestSchema, ListInstancesRequestSchema } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { createInstance, PROJECT, startCloudServer, type CloudServer } from '../../modules/cloud/fixtures.js';

/**
 * The native gRPC fast path (src/server/grpc-fast-path/) against connect-node's own gRPC handler, on
 * one real server: the same request is sent twice, once as the fast path takes it (no
 * `grpc-encoding`, or `identity`) and once with `grpc-encoding: gzip` — which the fast path leaves to
 * connect-node — in an uncompressed envelope (flag 0), so both read the very same message bytes.
 * The answers must match: status, response headers, the message bytes, and the trailers (status,
 * message, details). What the two may differ in is listed in `DIFFERENT` with the reason.
 */
let cloud: CloudServer;
let instanceId: string;

beforeAll(async () => {
  cloud = await startCloudServer();
  instanceId = (await createInstance(cloud, 'parity-vm')).metadata!.id;
});
afterAll(() => cloud?.close());

/**
 * Header fields the two paths may write differently, and why. Anything else must be equal.
 * - `traceparent`: each request is its own span (compared by trace id below, not by span id).
 * - `date`: the clock.
 */
const DIFFERENT = new Set(['traceparent', 'date']);

interface Answer {
  status: string;
  headers: Record<string, string>;
  body: string;
  trailers: Record<string, string>;
  traceId: string | undefined;
}

type Path = 'fast path' | 'connect-node';

/** One gRPC request on a new HTTP/2 session: the answer as bytes and header fields. */
function call(path: string, body: Buffer, headers: Record<string, string>, through: Path): Promise<Answer> {
  const session = http2.connect(cloud.server.url);
  return new Promise<Answer>((resolve, reject) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc+proto',
      te: 'trailers',
      'grpc-accept-encoding': 'identity',
      'grpc-encoding': through === 'fast path' ? 'identity' : 'gzip',
      ...headers,
    });
    const answer: Answer = { status: '', headers: {}, body: '', trailers: {}, traceId: undefined };
    const chunks: Buffer[] = [];
    stream.on('response', (received) => {
      answer.status = String(received[':status']);
      for (const [name, value] of Object.entries(received)) {
        if (name === 'traceparent') answer.traceId = String(value).split('-')[1];
        if (!name.startsWith(':') && !DIFFERENT.has(name) && value !== undefined) answer.headers[name] = String(value);
      }
    });
    stream.on('trailers', (received) => {
      for (const [name, value] of Object.entries(received)) if (value !== undefined) answer.trailers[name] = String(value);
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      answer.body = Buffer.concat(chunks).toString('hex');
      resolve(answer);
    });
    stream.on('error', reject);
    stream.end(body);
  }).finally(() => session.close());
}

/** A gRPC envelope: flag 0 (not compressed), the length, the message. */
function envelope(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

const INSTANCE = '/cloud.compute.v1.InstanceService';

/**
 * Trailer fields in which the two paths are known to differ for one case, and why: the test asserts
 * they still differ, so whoever aligns the two paths removes the entry.
 */
interface KnownDifference {
  trailers: string[];
  why: string;
}

/** [name, given: a request, checked: what the fast path's answer must show (so the case tests what it says), known differences]. */
const CASES: Array<[string, () => { path: string; body: Buffer; headers?: Record<string, string> }, (answer: Answer) => void, KnownDifference?]> = [
  [
    'an instance read',
    () => ({ path: `${INSTANCE}/Get`, body: envelope(toBinary(GetInstanceRequestSchema, create(GetInstanceRequestSchema, { id: instanceId }))) }),
    (answer) => expect(answer.trailers['grpc-status']).toBe('0'),
  ],
  [
    'a list page',
    () => ({
      path: `${INSTANCE}/List`,
      body: envelope(toBinary(ListInstancesRequestSchema, create(ListInstancesRequestSchema, { parentId: PROJECT, pageSize: 1n }))),
    }),
    (answer) => expect(answer.trailers['grpc-status']).toBe('0'),
  ],
  [
    'an id that names nothing (NOT_FOUND with details)',
    () => ({
      path: `${INSTANCE}/Get`,
      body: envelope(toBinary(GetInstanceRequestSchema, create(GetInstanceRequestSchema, { id: 'instance-e00nothing00000000' }))),
    }),
    (answer) => {
      expect(answer.trailers['grpc-status']).toBe('5');
      expect(answer.trailers['grpc-status-details-bin']).toBeTruthy();
    },
  ],
  [
    'no credentials (UNAUTHENTICATED, a message with characters to percent-encode)',
    () => ({
      path: `${INSTANCE}/Get`,
      body: envelope(toBinary(GetInstanceRequestSchema, create(GetInstanceRequestSchema, { id: instanceId }))),
      headers: { authorization: '' },
    }),
    (answer) => expect(answer.trailers['grpc-status']).toBe('16'),
  ],
  [
    'an empty message (INVALID_ARGUMENT for the missing id)',
    () => ({ path: `${INSTANCE}/Get`, body: envelope(new Uint8Array()) }),
    (answer) => expect(answer.trailers['grpc-status']).toBe('3'),
  ],
  [
    'bytes that are not the request message (INVALID_ARGUMENT)',
    () => ({ path: `${INSTANCE}/Get`, body: envelope(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f])) }),
    (answer) => {
      // Shaped as the interceptors shape errors, on both paths (src/server/rpc-early-errors.ts): the detail and the request id.
      expect(answer.trailers['grpc-status']).toBe('3');
      expect(answer.trailers['grpc-status-details-bin']).toBeTruthy();
      expect(answer.trailers['x-request-id']).toMatch(/^parity-/);
    },
  ],
  [
    'a grpc-timeout that does not parse',
    () => ({
      path: `${INSTANCE}/Get`,
      body: envelope(toBinary(GetInstanceRequestSchema, create(GetInstanceRequestSchema, { id: instanceId }))),
      headers: { 'grpc-timeout': 'soon' },
    }),
    (answer) => {
      expect(answer.trailers['grpc-status']).toBe('3');
      expect(answer.trailers['grpc-status-details-bin']).toBeTruthy();
      expect(answer.trailers['x-request-id']).toMatch(/^parity-/);
    },
  ],
];

// Every row as long as the test's parameters: jest passes a `done` callback to a function taking more.
const ROWS = CASES.map(([name, given, checked, known]) => [name, given, checked, known] as const);

test.each(ROWS)('%s: the fast path answers what connect-node answers', async (_name, given, checked, known) => {
  const { path, body, headers = {} } = given();
  const traceparent = `00-${randomUUID().replace(/-/g, '')}-${'1'.repeat(16)}-01`;
  const request = { authorization: `Bearer ${cloud.admin.token}`, 'x-request-id': `parity-${randomUUID()}`, traceparent, ...headers };
  if (request.authorization === '') delete (request as Partial<typeof request>).authorization;
  const fast = await call(path, body, request, 'fast path');
  const connect = await call(path, body, request, 'connect-node');
  checked(fast);
  for (const name of known?.trailers ?? []) {
    // Still different (else the entry goes): `why` says how.
    expect({ name, why: known?.why, same: fast.trailers[name] === connect.trailers[name] }).toEqual({ name, why: known?.why, same: false });
    delete fast.trailers[name];
    delete connect.trailers[name];
  }
  expect({ ...fast, traceId: fast.traceId === traceparent.split('-')[1] }).toEqual({ ...connect, traceId: true });
});

test('the two requests really take the two paths (asked for no particular compression, connect-node answers a gzip request with grpc-encoding: gzip)', async () => {
  const body = envelope(toBinary(GetInstanceRequestSchema, create(GetInstanceRequestSchema, { id: instanceId })));
  const seen: Partial<Record<Path, string>> = {};
  for (const through of ['fast path', 'connect-node'] as const) {
    const session = http2.connect(cloud.server.url);
    seen[through] = await new Promise<string>((resolve, reject) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': `${INSTANCE}/Get`,
        'content-type': 'application/grpc+proto',
        te: 'trailers',
        authorization: `Bearer ${cloud.admin.token}`,
        'grpc-encoding': through === 'fast path' ? 'identity' : 'gzip',
      });
      stream.on('response', (headers) => resolve(String(headers['grpc-encoding'] ?? 'none')));
      stream.on('error', reject);
      stream.resume();
      stream.end(body);
    }).finally(() => session.close());
  }
  expect(seen).toEqual({ 'fast path': 'none', 'connect-node': 'gzip' });
});
