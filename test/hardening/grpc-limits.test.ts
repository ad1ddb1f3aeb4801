import http from 'node:http';
import http2 from 'node:http2';
import { once } from 'node:events';
import { createGzip, gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { startServer, type TestServer } from '../support/app.js';
import { startServerProcess, type ServerProcess } from './grpc-server-child.js';

const LIMIT = 4 * 1024 * 1024;
const GET = '/cloud.compute.v1.InstanceService/Get';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.close());

/** A GetInstanceRequest whose `id` (field 1, a string) is `size` bytes: valid protobuf, too large. */
function oversizedGetRequest(size: number): Buffer {
  const varint: number[] = [];
  for (let rest = size; ; rest = Math.floor(rest / 128)) {
    if (rest < 128) {
      varint.push(rest);
      break;
    }
    varint.push((rest % 128) | 128);
  }
  return Buffer.concat([Buffer.from([0x0a, ...varint]), Buffer.alloc(size, 0x61)]);
}

function envelope(message: Buffer, compressed = false): Buffer {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/** gzip of `size` zero bytes, produced a megabyte at a time so the test itself stays small. */
async function gzipBomb(size: number): Promise<Buffer> {
  const gzip = createGzip({ level: 9 });
  const out: Buffer[] = [];
  gzip.on('data', (chunk: Buffer) => out.push(chunk));
  const zeros = Buffer.alloc(1024 * 1024);
  for (let written = 0; written < size; written += zeros.length) {
    if (!gzip.write(zeros)) await once(gzip, 'drain');
  }
  gzip.end();
  await once(gzip, 'end');
  return Buffer.concat(out);
}

interface H2Answer {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
}

/** One raw HTTP/2 request; `body` is written in full unless `partial`, which writes it and leaves the stream open. */
async function h2Request(headers: http2.OutgoingHttpHeaders, body: Buffer, partial = false, url = server.url): Promise<H2Answer> {
  const session = http2.connect(url);
  session.on('error', () => undefined);
  try {
    const stream = session.request({ ':method': 'POST', ...headers });
    stream.on('error', () => undefined);
    const answer: H2Answer = { headers: {}, trailers: {}, body: Buffer.alloc(0) };
    const chunks: Buffer[] = [];
    stream.on('response', (received) => (answer.headers = received));
    stream.on('trailers', (received) => {
      answer.trailers = received;
      // The status is in: stop sending, as a gRPC client does (a partial body is never finished).
      if (partial) stream.close();
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    if (partial) stream.write(body);
    else stream.end(body);
    await once(stream, 'close');
    answer.body = Buffer.concat(chunks);
    return answer;
  } finally {
    session.destroy();
  }
}

function grpcStatusOf(answer: H2Answer): string | undefined {
  return (answer.trailers['grpc-status'] ?? answer.headers['grpc-status']) as string | undefined;
}

describe('native gRPC (the unary fast path)', () => {
  test('a 5 MiB message from @grpc/grpc-js ends with RESOURCE_EXHAUSTED, not a call that waits forever', async () => {
    const client = new grpc.Client(new URL(server.url).host, grpc.credentials.createInsecure());
    try {
      const error = await new Promise<grpc.ServiceError>((resolve, reject) => {
        client.makeUnaryRequest(
          GET,
          (value: Buffer) => value,
          (value: Buffer) => value,
          oversizedGetRequest(5 * 1024 * 1024),
          new grpc.Metadata(),
          // A bound, so that the old behaviour fails as DEADLINE_EXCEEDED instead of hanging the suite.
          { deadline: Date.now() + 10_000 },
          (callError) => (callError ? resolve(callError) : reject(new Error('the call succeeded'))),
        );
      });
      expect(grpc.status[error.code]).toBe('RESOURCE_EXHAUSTED');
      expect(error.details).toMatch(/larger than the limit of 4194304 bytes/);
    } finally {
      client.close();
    }
  });

  test('an envelope announcing more than the limit is refused at once, while the client has sent only its first kilobyte', async () => {
    const head = envelope(Buffer.alloc(0));
    head.writeUInt32BE(5 * 1024 * 1024, 1);
    const answer = await h2Request({ ':path': GET, 'content-type': 'application/grpc', te: 'trailers' }, Buffer.concat([head, Buffer.alloc(1024)]), true);
    expect(answer.headers[':status']).toBe(200);
    expect(grpcStatusOf(answer)).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
  });

  test('a Content-Length above the limit is refused before any byte of the body arrives', async () => {
    const answer = await h2Request(
      { ':path': GET, 'content-type': 'application/grpc', te: 'trailers', 'content-length': String(LIMIT + 1024) },
      Buffer.alloc(0),
      true,
    );
    expect(grpcStatusOf(answer)).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
  });

  test('a message at the limit is still read (and then judged on its content)', async () => {
    const answer = await h2Request({ ':path': GET, 'content-type': 'application/grpc', te: 'trailers' }, envelope(oversizedGetRequest(LIMIT - 16)));
    expect(grpcStatusOf(answer)).toBe(String(grpc.status.UNAUTHENTICATED));
  });
});

describe('Connect unary', () => {
  test.each([
    ['proto', 'application/proto', oversizedGetRequest(5 * 1024 * 1024)],
    ['JSON', 'application/json', Buffer.from(JSON.stringify({ id: 'a'.repeat(5 * 1024 * 1024) }))],
  ])('a 5 MiB %s body is resource_exhausted (HTTP 429)', async (_name, contentType, body) => {
    const response = await fetch(`${server.url}${GET}`, { method: 'POST', headers: { 'content-type': contentType, 'connect-protocol-version': '1' }, body });
    expect(response.status).toBe(429);
    expect(await response.json()).toMatchObject({ code: 'resource_exhausted' });
  });

  test('a Content-Length above the limit is answered before the body is sent (nothing buffered)', async () => {
    const request = http.request(`${server.url}${GET}`, {
      method: 'POST',
      headers: { 'content-type': 'application/proto', 'connect-protocol-version': '1', 'content-length': String(LIMIT * 2) },
    });
    request.on('error', () => undefined);
    request.write(Buffer.alloc(1024));
    const [response] = (await once(request, 'response')) as [http.IncomingMessage];
    const chunks: Buffer[] = [];
    for await (const chunk of response) chunks.push(chunk as Buffer);
    request.destroy();
    expect(response.statusCode).toBe(429);
    expect(JSON.parse(Buffer.concat(chunks).toString())).toMatchObject({ code: 'resource_exhausted' });
  });
});

describe('gRPC-Web', () => {
  test('a 5 MiB message is RESOURCE_EXHAUSTED', async () => {
    const response = await fetch(`${server.url}${GET}`, {
      method: 'POST',
      headers: { 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1' },
      body: envelope(oversizedGetRequest(5 * 1024 * 1024)),
    });
    const body = Buffer.from(await response.arrayBuffer()).toString('latin1');
    expect(response.headers.get('grpc-status') ?? /grpc-status: ?(\d+)/.exec(body)?.[1]).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
  });
});

describe('gzip bombs (against a server process, whose peak memory is measured)', () => {
  let bomb: Buffer;
  let child: ServerProcess;
  let baseline: number;
  beforeAll(async () => {
    // 128 MiB of zeros in ~130 KB: an unbounded inflate of one of them adds that much to the server.
    [bomb, child] = await Promise.all([gzipBomb(128 * 1024 * 1024), startServerProcess()]);
    // The baseline after one small gzip request down each path the bombs take: a fresh process's
    // first requests (code loaded and compiled, heap grown, a first HTTP/2 session) raise its peak by
    // tens of MiB of their own, which once put the bombs' share over the bound (99 MiB in all).
    const small = gzipSync(oversizedGetRequest(16));
    await fetch(`${child.url}${GET}`, {
      method: 'POST',
      headers: { 'content-type': 'application/proto', 'connect-protocol-version': '1', 'content-encoding': 'gzip' },
      body: small,
    });
    await fetch(`${child.url}${GET}`, {
      method: 'POST',
      headers: { 'content-type': 'application/grpc-web+proto', 'grpc-encoding': 'gzip', 'x-grpc-web': '1' },
      body: envelope(small, true),
    }).then((response) => response.arrayBuffer());
    await h2Request({ ':path': GET, 'content-type': 'application/grpc', 'grpc-encoding': 'gzip', te: 'trailers' }, envelope(small, true), false, child.url);
    baseline = (await child.memory()).maxRss;
  });
  afterAll(async () => {
    const peak = (await child.memory()).maxRss;
    await child?.close();
    // Each bomb inflates to at most the 4 MiB limit; 128 MiB would have been inflated before auth.
    expect(peak - baseline).toBeLessThan(64 * 1024 * 1024);
  });

  test('Connect unary (Content-Encoding: gzip) is resource_exhausted', async () => {
    const response = await fetch(`${child.url}${GET}`, {
      method: 'POST',
      headers: { 'content-type': 'application/proto', 'connect-protocol-version': '1', 'content-encoding': 'gzip' },
      body: bomb,
    });
    expect(response.status).toBe(429);
    expect(await response.json()).toMatchObject({ code: 'resource_exhausted', message: expect.stringMatching(/after decompression/) });
  });

  test('gRPC-Web (grpc-encoding: gzip) is RESOURCE_EXHAUSTED', async () => {
    const response = await fetch(`${child.url}${GET}`, {
      method: 'POST',
      headers: { 'content-type': 'application/grpc-web+proto', 'grpc-encoding': 'gzip', 'x-grpc-web': '1' },
      body: envelope(bomb, true),
    });
    const body = Buffer.from(await response.arrayBuffer()).toString('latin1');
    expect(response.headers.get('grpc-status') ?? /grpc-status: ?(\d+)/.exec(body)?.[1]).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
  });

  test('gRPC over HTTP/2 (grpc-encoding: gzip, served by connect-node) is RESOURCE_EXHAUSTED', async () => {
    const answer = await h2Request(
      { ':path': GET, 'content-type': 'application/grpc', 'grpc-encoding': 'gzip', te: 'trailers' },
      envelope(bomb, true),
      false,
      child.url,
    );
    expect(grpcStatusOf(answer)).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
  });
});
