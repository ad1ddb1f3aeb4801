import http2 from 'node:http2';
import { once } from 'node:events';
import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { createInstance, startCloudServer, type CloudServer } from '../modules/cloud/fixtures.js';

let cloud: CloudServer;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  cloud = await startCloudServer();
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await cloud?.close();
});

/** An envelope header announcing `announced` bytes, followed by only `sent` bytes of them. */
function truncatedEnvelope(announced: number, sent: number): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(announced, 1);
  return Buffer.concat([head, Buffer.alloc(sent, 0x41)]);
}

test('native gRPC streams left mid-message by a destroyed session do not crash the server, and it keeps answering', async () => {
  for (let round = 0; round < 3; round++) {
    const session = http2.connect(cloud.server.url);
    session.on('error', () => undefined);
    await once(session, 'connect');
    const streams = Array.from({ length: 8 }, () => {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/cloud.compute.v1.InstanceService/Get',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      stream.on('error', () => undefined);
      stream.write(truncatedEnvelope(1024 * 1024, 1024));
      return stream;
    });
    // Half the streams end their side (the server then parses a short body), the rest are left open.
    streams.slice(0, 4).forEach((stream) => stream.end());
    // A ping answered means the server has read every frame sent before it.
    await new Promise((resolve, reject) => session.ping((error) => (error ? reject(error) : resolve(undefined))));
    session.destroy();
    await once(session, 'close');
  }
  // The server handles those streams while these calls go on (an unhandled rejection there fails the suite).
  const instance = await createInstance(cloud, 'after-attack');
  const { message } = await cloud.grpc.call(InstanceService.method.get, { id: instance.metadata?.id ?? '' }, { token: cloud.admin.token });
  expect(message.metadata?.name).toBe('after-attack');
  expect(unhandled).toEqual([]);
});
