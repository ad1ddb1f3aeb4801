/**
 * The baselines of `npm run bench:grpc`: a bare connect-node HTTP/2 server and a raw @grpc/grpc-js
 * server, each answering InstanceService.Get with the same Instance message from memory (no auth,
 * no store). BASELINE=connect|grpc-js picks one; INSTANCE_BASE64 is the message to answer.
 */
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { InstanceSchema } from '../generated/proto/cloud/compute/v1/instance_pb.js';
import { GetInstanceRequestSchema, InstanceService } from '../generated/proto/cloud/compute/v1/instance_service_pb.js';

const bytes = Buffer.from(process.env.INSTANCE_BASE64 ?? '', 'base64');
const instance = fromBinary(InstanceSchema, bytes);
const announce = (port: number) => process.stdout.write(`listening ${port}\n`);

if (process.env.BASELINE === 'grpc-js') {
  const server = new grpc.Server();
  const get = InstanceService.method.get;
  server.addService(
    {
      get: {
        path: `/${InstanceService.typeName}/${get.name}`,
        requestStream: false,
        responseStream: false,
        requestDeserialize: (data: Buffer) => fromBinary(GetInstanceRequestSchema, data),
        requestSerialize: (message: unknown) => Buffer.from(toBinary(GetInstanceRequestSchema, message as never)),
        responseSerialize: () => bytes,
        responseDeserialize: (data: Buffer) => fromBinary(InstanceSchema, data),
      },
    },
    { get: (_call: unknown, callback: (error: null, value: unknown) => void) => callback(null, instance) },
  );
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => {
    if (error) throw error;
    announce(port);
  });
} else {
  const handler = connectNodeAdapter({ routes: (router) => void router.service(InstanceService, { get: () => instance }) });
  const server = http2.createServer(handler);
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    announce(typeof address === 'object' && address ? address.port : 0);
  });
}
