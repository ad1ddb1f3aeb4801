import { Code, ConnectError } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { createCloudSdk, requestIdOf, type TransportFactory } from '../../src/sdk/index.js';
import { describeError } from '../../src/cli/output.js';
import { startCloudServer, type CloudServer } from '../modules/cloud/fixtures.js';

// The request id of a failed call is read once, whatever the transport: a gRPC or gRPC-Web answer
// carries it in the response header and again in the trailer (for clients that read only trailers),
// connect-es merges both into error.metadata, and requestIdOf read the two as one ("X, X").

let cloud: CloudServer;
beforeAll(async () => {
  cloud = await startCloudServer();
});
afterAll(async () => {
  await cloud?.close();
});

const TRANSPORTS: Array<[string, TransportFactory]> = [
  ['gRPC (HTTP/2)', (options) => createGrpcTransport(options)],
  ['gRPC-Web over HTTP/1.1', (options) => createGrpcWebTransport({ ...options, httpVersion: '1.1' })],
  ['gRPC-Web over HTTP/2', (options) => createGrpcWebTransport({ ...options, httpVersion: '2' })],
  ['Connect over HTTP/1.1', (options) => createConnectTransport({ ...options, httpVersion: '1.1' })],
  ['Connect over HTTP/2', (options) => createConnectTransport({ ...options, httpVersion: '2' })],
];

test.each(TRANSPORTS)('over %s a failed call carries its request id once, and cfs prints it once', async (_name, transport) => {
  const requestId = `rid-${Math.random().toString(36).slice(2, 12)}`;
  const sdk = createCloudSdk({ baseUrl: cloud.server.url, transport, credentials: { token: cloud.admin.token } });
  try {
    const error = await sdk
      .client(InstanceService)
      .get({ id: 'instance-missing' }, { headers: { 'x-request-id': requestId } })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.NotFound);
    expect(requestIdOf(error as ConnectError)).toBe(requestId);
    const printed = describeError(error);
    expect(printed.match(/request id: .*/g)).toEqual([`request id: ${requestId}`]);
  } finally {
    sdk.close();
  }
});
