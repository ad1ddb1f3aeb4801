import * as grpc from '@grpc/grpc-js';
import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type DescMethodServerStreaming,
  type DescMethodUnary,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { ConnectError, type Transport } from '@connectrpc/connect';
import { ServiceErrorSchema, type ServiceError } from '../../generated/proto/cloud/common/v1/error_pb.js';
import { StatusSchema, type Status } from '../../generated/proto/google/rpc/status_pb.js';

/** A failed call as a grpc-js client sees it, with the ServiceError decoded from `grpc-status-details-bin`. */
export class GrpcCallError extends Error {
  constructor(
    readonly code: grpc.status,
    readonly details: string,
    readonly metadata: grpc.Metadata,
    readonly status: Status | undefined,
    readonly serviceError: ServiceError | undefined,
    /** The response headers (empty for a trailers-only response). */
    readonly headers: grpc.Metadata = new grpc.Metadata(),
  ) {
    super(`${grpc.status[code]}: ${details}`);
  }
}

export interface CallOptions {
  token?: string;
  headers?: Record<string, string | string[]>;
}

export interface CallResult<O> {
  message: O;
  headers: grpc.Metadata;
}

/** What the contract cases need of a client: one unary call, answered or failed the grpc-js way. */
export interface RpcTestClient {
  call<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    request: MessageInitShape<I>,
    options?: CallOptions,
  ): Promise<CallResult<MessageShape<O>>>;
  /** A server-streaming call: answers its first message and cancels the rest (streams such as health Watch never end). */
  first<I extends DescMessage, O extends DescMessage>(
    method: DescMethodServerStreaming<I, O>,
    request: MessageInitShape<I>,
    options?: CallOptions,
  ): Promise<CallResult<MessageShape<O>>>;
}

/**
 * A plain @grpc/grpc-js client (h2c, no proto-loader): requests and responses are encoded with the
 * generated protobuf-es schemas, exactly as a client written from the protos alone would.
 */
export class GrpcTestClient implements RpcTestClient {
  readonly client: grpc.Client;

  constructor(url: string, channelOptions: grpc.ChannelOptions = {}) {
    const address = new URL(url).host;
    this.client = new grpc.Client(address, grpc.credentials.createInsecure(), channelOptions);
  }

  call<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    request: MessageInitShape<I>,
    options: CallOptions = {},
  ): Promise<CallResult<MessageShape<O>>> {
    return this.callRaw(method, toBinary(method.input, create(method.input, request)), options);
  }

  first<I extends DescMessage, O extends DescMessage>(
    method: DescMethodServerStreaming<I, O>,
    request: MessageInitShape<I>,
    options: CallOptions = {},
  ): Promise<CallResult<MessageShape<O>>> {
    return new Promise((resolve, reject) => {
      let headers = new grpc.Metadata();
      let answered = false;
      const call = this.client.makeServerStreamRequest(
        `/${method.parent.typeName}/${method.name}`,
        (value: Uint8Array) => Buffer.from(value),
        (buffer: Buffer) => fromBinary(method.output, buffer),
        toBinary(method.input, create(method.input, request)),
        metadataOf(options),
      );
      call.on('metadata', (received: grpc.Metadata) => (headers = received));
      call.on('data', (message: MessageShape<O>) => {
        if (answered) return;
        answered = true;
        resolve({ message, headers });
        call.cancel();
      });
      call.on('error', (error: grpc.ServiceError) => {
        if (!answered) reject(toCallError(error, headers));
      });
      call.on('end', () => {
        if (!answered) reject(new Error(`${method.name} ended without a message`));
      });
    });
  }

  /** Sends exact bytes as the request message (for malformed-input tests). */
  callRaw<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    bytes: Uint8Array,
    options: CallOptions = {},
  ): Promise<CallResult<MessageShape<O>>> {
    const metadata = metadataOf(options);
    const path = `/${method.parent.typeName}/${method.name}`;
    return new Promise((resolve, reject) => {
      let headers = new grpc.Metadata();
      const call = this.client.makeUnaryRequest(
        path,
        (value: Uint8Array) => Buffer.from(value),
        (buffer: Buffer) => fromBinary(method.output, buffer),
        bytes,
        metadata,
        {},
        (error, message) => {
          if (error) {
            reject(toCallError(error, headers));
            return;
          }
          resolve({ message: message as MessageShape<O>, headers });
        },
      );
      call.on('metadata', (received) => {
        headers = received;
      });
    });
  }

  close(): void {
    this.client.close();
  }
}

function metadataOf(options: CallOptions): grpc.Metadata {
  const metadata = new grpc.Metadata();
  if (options.token) metadata.set('authorization', `Bearer ${options.token}`);
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    for (const item of Array.isArray(value) ? value : [value]) metadata.add(name, item);
  }
  return metadata;
}

function toCallError(error: grpc.ServiceError, headers: grpc.Metadata): GrpcCallError {
  const raw = error.metadata?.get('grpc-status-details-bin')[0];
  const status = raw instanceof Buffer ? fromBinary(StatusSchema, raw) : undefined;
  const serviceError = status?.details.map((any) => anyUnpack(any, ServiceErrorSchema)).find((value) => value !== undefined);
  return new GrpcCallError(error.code, error.details, error.metadata ?? new grpc.Metadata(), status, serviceError, headers);
}

/** Awaits a call that must fail and returns its error. */
export async function expectGrpcError(promise: Promise<unknown>): Promise<GrpcCallError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof GrpcCallError) return error;
    throw error;
  }
  throw new Error('the call succeeded but should have failed');
}

/**
 * The same calls through a connect-node transport (Connect JSON or binary, gRPC-Web, gRPC), with
 * answers and errors turned into what GrpcTestClient gives, so one table of cases runs over every
 * protocol. The protocols other than gRPC carry no `grpc-status-details-bin`: their error details
 * (Connect's JSON `details`, gRPC-Web's trailer) become the google.rpc.Status a gRPC client would see.
 */
export class ConnectTestClient implements RpcTestClient {
  constructor(private readonly transport: Transport) {}

  async call<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    request: MessageInitShape<I>,
    options: CallOptions = {},
  ): Promise<CallResult<MessageShape<O>>> {
    try {
      const response = await this.transport.unary(method, undefined, undefined, headersOf(options), request);
      return { message: response.message, headers: toMetadata(response.header) };
    } catch (error) {
      throw fromConnectError(ConnectError.from(error));
    }
  }

  async first<I extends DescMessage, O extends DescMessage>(
    method: DescMethodServerStreaming<I, O>,
    request: MessageInitShape<I>,
    options: CallOptions = {},
  ): Promise<CallResult<MessageShape<O>>> {
    const abort = new AbortController();
    try {
      const response = await this.transport.stream(
        method,
        abort.signal,
        undefined,
        headersOf(options),
        (async function* () {
          yield create(method.input, request);
        })(),
      );
      for await (const message of response.message) return { message, headers: toMetadata(response.header) };
      throw new Error(`${method.name} ended without a message`);
    } catch (error) {
      if (error instanceof Error && error.message.endsWith('ended without a message')) throw error;
      throw fromConnectError(ConnectError.from(error));
    } finally {
      abort.abort();
    }
  }
}

function headersOf(options: CallOptions): Headers {
  const header = new Headers();
  if (options.token) header.set('authorization', `Bearer ${options.token}`);
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    for (const item of Array.isArray(value) ? value : [value]) header.append(name, item);
  }
  return header;
}

function toMetadata(headers: Headers): grpc.Metadata {
  const metadata = new grpc.Metadata();
  headers.forEach((value, key) => {
    if (key.endsWith('-bin')) metadata.add(key, Buffer.from(value, 'base64'));
    else metadata.add(key, value);
  });
  return metadata;
}

function fromConnectError(error: ConnectError): GrpcCallError {
  const status = create(StatusSchema, {
    code: error.code,
    message: error.rawMessage,
    details: error.details.map((detail) =>
      'desc' in detail
        ? { typeUrl: `type.googleapis.com/${detail.desc.typeName}`, value: toBinary(detail.desc, create(detail.desc, detail.value)) }
        : { typeUrl: `type.googleapis.com/${detail.type}`, value: detail.value },
    ),
  });
  const serviceError = error.findDetails(ServiceErrorSchema)[0];
  const metadata = toMetadata(error.metadata);
  return new GrpcCallError(
    error.code as number as grpc.status,
    error.rawMessage,
    metadata,
    error.details.length > 0 ? status : undefined,
    serviceError,
    metadata,
  );
}
