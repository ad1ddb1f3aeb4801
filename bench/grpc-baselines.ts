/**
 * The baselines of `npm run bench:grpc`, one per process (BASELINE picks it):
 * - `grpc-js-store` (the fair baseline): a raw @grpc/grpc-js server doing the same store read as the
 *   full stack's InstanceService.Get (the same SQL on a pg Pool as large as the server's, against the
 *   same database) and decoding the row's data into the same Instance message. No auth, interceptors
 *   or validation: what a hand-written grpc-js + pg service would do.
 * - `grpc-js` and `connect`: a raw @grpc/grpc-js server and a bare connect-node HTTP/2 server
 *   answering the Instance in INSTANCE_BASE64 from memory (transport only).
 */
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import pg from 'pg';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { InstanceSchema, type Instance } from '../generated/proto/cloud/compute/v1/instance_pb.js';
import { GetInstanceRequestSchema, InstanceService, type GetInstanceRequest } from '../generated/proto/cloud/compute/v1/instance_service_pb.js';

/** The server's pool size (src/store/database.ts: `poolMax` defaults to 10 and the server sets no other). */
const SERVER_POOL_SIZE = 10;
/** What the full stack sends for InstanceService.Get (ResourceRepository.findById on compute_instances). */
const FIND_INSTANCE_SQL = 'SELECT id, seq, parent_id, name, resource_version, data FROM compute_instances WHERE id = $1';

const announce = (port: number) => process.stdout.write(`listening ${port}\n`);
// An orderly exit on the driver's SIGTERM, so a CPU profile (--cpu-prof) gets written.
process.on('SIGTERM', () => process.exit(0));
const get = InstanceService.method.get;

if (process.env.BASELINE === 'connect') {
  const instance = fromBinary(InstanceSchema, Buffer.from(process.env.INSTANCE_BASE64 ?? '', 'base64'));
  const handler = connectNodeAdapter({ routes: (router) => void router.service(InstanceService, { get: () => instance }) });
  const server = http2.createServer(handler);
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    announce(typeof address === 'object' && address ? address.port : 0);
  });
} else {
  type Callback = (error: Partial<grpc.ServiceError> | null, value?: Instance) => void;
  let answer: (request: GetInstanceRequest, callback: Callback) => void;
  if (process.env.BASELINE === 'grpc-js-store') {
    const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: SERVER_POOL_SIZE });
    answer = (request, callback) => {
      pool.query<{ data: Buffer }>(FIND_INSTANCE_SQL, [request.id]).then(
        ({ rows }) => {
          const row = rows[0];
          if (row) callback(null, fromBinary(InstanceSchema, row.data));
          else callback({ code: grpc.status.NOT_FOUND, details: `instance ${request.id} not found` });
        },
        (error: unknown) => callback({ code: grpc.status.UNAVAILABLE, details: String(error) }),
      );
    };
  } else {
    const instance = fromBinary(InstanceSchema, Buffer.from(process.env.INSTANCE_BASE64 ?? '', 'base64'));
    answer = (_request, callback) => callback(null, instance);
  }
  const server = new grpc.Server();
  server.addService(
    {
      get: {
        path: `/${InstanceService.typeName}/${get.name}`,
        requestStream: false,
        responseStream: false,
        requestDeserialize: (data: Buffer) => fromBinary(GetInstanceRequestSchema, data),
        requestSerialize: (message: GetInstanceRequest) => Buffer.from(toBinary(GetInstanceRequestSchema, message)),
        responseSerialize: (message: Instance) => Buffer.from(toBinary(InstanceSchema, message)),
        responseDeserialize: (data: Buffer) => fromBinary(InstanceSchema, data),
      },
    },
    { get: (call: grpc.ServerUnaryCall<GetInstanceRequest, Instance>, callback: Callback) => answer(call.request, callback) },
  );
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => {
    if (error) throw error;
    announce(port);
  });
}
