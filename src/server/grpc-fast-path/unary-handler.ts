import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError, createContextValues, type ContextValues, type Interceptor, type ServiceImplSpec } from '@connectrpc/connect';
import { parseTimeout, setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import { encodeGrpcMessage } from '../grpc-message.js';
import { headerLinesKey, headerLinesOf } from '../header-lines.js';
import { CallContext } from './call-context.js';
import { invokeUnary, type UnarySpec } from './invoke-unary.js';
import { RequestHeaders } from './request-headers.js';

/** A service as registered on the Connect router, with the interceptors it was registered with. */
export interface RegisteredService {
  spec: ServiceImplSpec;
  interceptors: Interceptor[];
  /** Shapes errors raised before the interceptors run (an unparsable message), as they would shape them. */
  shapeError?: (error: ConnectError, requestId: string) => ConnectError;
}

export interface GrpcUnaryOptions {
  services: RegisteredService[];
  contextValues?: () => ContextValues;
  /** RPC_MAX_MESSAGE_BYTES. */
  maxMessageBytes: number;
}

export interface GrpcUnaryHandler {
  /** True when this handler serves the stream: plain gRPC (proto, uncompressed) to a unary method. */
  accepts(headers: IncomingHttpHeaders): boolean;
  /**
   * Serves the call; `onDone` gets the final gRPC status code, for the request log. `responseHeaders`
   * go out with the response headers (the server's `traceparent`). `rawHeaders` (Node's, as the
   * `stream` event gives them) keep repeated header lines apart for the handlers (header-lines.ts).
   */
  handle(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    requestId: string,
    onDone?: (code: number) => void,
    responseHeaders?: Record<string, string>,
    rawHeaders?: readonly string[],
  ): void;
}

const CONTENT_TYPE = /^application\/grpc(\+proto)?$/;

/**
 * Native gRPC unary calls without connect-node's streaming pipeline. connect-node reached ~0.18× the
 * throughput of a raw @grpc/grpc-js server here (per-call async iterables, AbortSignals, compat
 * request objects); this path reads the one envelope from the raw HTTP/2 stream and runs the very same
 * service implementations and interceptors as connect's `invokeUnaryImplementation` does, with a
 * lighter call context (InstanceService.Get: ~0.7× a raw grpc-js server doing the same store read,
 * docs/architecture.md). Everything else (streaming, compression, JSON, Connect, gRPC-Web) stays on connect-node.
 */
export function createGrpcUnaryHandler(options: GrpcUnaryOptions): GrpcUnaryHandler {
  const maxBytes = options.maxMessageBytes;
  const routes = new Map<
    string,
    { spec: UnarySpec; service: ServiceImplSpec['service']; interceptors: Interceptor[]; shapeError: RegisteredService['shapeError'] }
  >();
  for (const { spec: service, interceptors, shapeError } of options.services) {
    for (const spec of Object.values(service.methods)) {
      if (spec.kind === 'unary') routes.set(`/${service.service.typeName}/${spec.method.name}`, { spec, service: service.service, interceptors, shapeError });
    }
  }

  return {
    accepts(headers) {
      const encoding = headers['grpc-encoding'];
      return (
        headers[':method'] === 'POST' &&
        routes.has(headers[':path'] ?? '') &&
        CONTENT_TYPE.test(headers['content-type'] ?? '') &&
        (encoding === undefined || encoding === 'identity')
      );
    },
    handle(stream, headers, requestId, onDone, responseHeaders, rawHeaders) {
      const path = headers[':path'] ?? '';
      const route = routes.get(path)!;
      const chunks: Buffer[] = [];
      let size = 0;
      let finished = false;
      let context: CallContext | undefined;
      const reject = (error: ConnectError) => finish(route.shapeError ? route.shapeError(error, requestId) : error);
      /**
       * Answers once. A stream the client closed or reset (or whose session is gone) is finished as it
       * is: writing to it throws, and nothing would read the answer. A client still sending a refused
       * body stops when it reads the status (no RST_STREAM after the trailers: nghttp2 would drop the
       * queued trailers, and grpc-js then waits forever); what it still sends is dropped unread.
       */
      const finish = (error: ConnectError | undefined, output?: Uint8Array, responseHeader?: Headers, responseTrailer?: Headers) => {
        if (finished) return;
        finished = true;
        context?.end();
        if (stream.destroyed || stream.closed) {
          onDone?.(Code.Canceled);
          return;
        }
        let code: Code | 0 = 0;
        const head: Record<string, string> = { ':status': '200', 'content-type': 'application/grpc+proto', 'x-request-id': requestId };
        if (responseHeaders) for (const name in responseHeaders) head[name] = responseHeaders[name]!;
        responseHeader?.forEach((value, key) => (head[key] = value));
        const trailer: Record<string, string> = {};
        let envelope: Buffer | undefined;
        if (output && output.length > maxBytes) {
          error = new ConnectError(`response message larger than ${maxBytes} bytes`, Code.ResourceExhausted);
        }
        if (error || !output) {
          // Headers first, then the status in trailers, as connect-node answers (clients read
          // response headers such as x-request-id from the headers frame).
          const shaped = error ?? new ConnectError('no response', Code.Internal);
          setTrailerStatus(new Headers(), shaped).forEach((value, key) => (trailer[key] = value));
          // connect's encodeURIComponent encodes more than the spec's bytes (src/server/grpc-message.ts).
          trailer['grpc-message'] = encodeGrpcMessage(shaped.rawMessage);
          code = shaped.code;
        } else {
          responseTrailer?.forEach((value, key) => (trailer[key] = value));
          trailer['grpc-status'] = '0';
          envelope = Buffer.allocUnsafe(5 + output.length);
          envelope[0] = 0;
          envelope.writeUInt32BE(output.length, 1);
          envelope.set(output, 5);
        }
        try {
          stream.respond(head, { waitForTrailers: true });
          // Emitted once per stream: `on`, without once's wrapper per call.
          stream.on('wantTrailers', () => {
            // The stream may have been reset between the last data frame and this event.
            if (stream.destroyed || stream.closed) return;
            try {
              stream.sendTrailers(trailer);
            } catch {
              // closed under us: nothing left to tell the client
            }
          });
          stream.end(envelope);
        } catch {
          // The stream closed between the check above and the write; the client is gone.
        }
        onDone?.(code);
      };
      const tooLarge = (bytes: number) => new ConnectError(`message of ${bytes} bytes is larger than the limit of ${maxBytes} bytes`, Code.ResourceExhausted);

      // Refuse before buffering whenever the size is known: from Content-Length, or from the envelope header.
      const declared = Number(headers['content-length']);
      if (Number.isSafeInteger(declared) && declared > maxBytes + 5) {
        stream.on('error', () => undefined);
        stream.resume();
        reject(tooLarge(declared - 5));
        return;
      }
      stream.on('data', (chunk: Buffer) => {
        if (finished) return; // refused: the rest of the body is dropped as it arrives
        const before = size;
        size += chunk.length;
        chunks.push(chunk);
        if (before < 5 && size >= 5) {
          const head = chunks.length === 1 ? chunk : Buffer.concat(chunks);
          const announced = head.readUInt32BE(1);
          if (announced > maxBytes) {
            chunks.length = 0;
            reject(tooLarge(announced));
            return;
          }
        }
        if (size > maxBytes + 5) {
          // Only reachable with more than one message on a unary call.
          chunks.length = 0;
          reject(new ConnectError('expected exactly one message', Code.InvalidArgument));
        }
      });
      stream.on('error', () => undefined);
      stream.on('end', () => {
        if (finished) return;
        run(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).catch((error: unknown) => finish(ConnectError.from(error)));
      });

      async function run(body: Buffer) {
        // The client may have gone already (its session destroyed right after its last frame).
        if (stream.destroyed || stream.closed) return finish(new ConnectError('the client cancelled the call', Code.Canceled));
        const timeout = parseTimeout((headers['grpc-timeout'] as string | undefined) ?? null, 24 * 3600 * 1000);
        if (timeout.error) return reject(timeout.error);
        if (body.length < 5 || (body[0]! & 1) === 1 || body.readUInt32BE(1) !== body.length - 5) {
          return reject(new ConnectError('expected exactly one uncompressed message', Code.InvalidArgument));
        }
        let input;
        try {
          input = fromBinary(route.spec.method.input, body.subarray(5));
        } catch (error) {
          // connect-node's own error for it (src/connectrpc serialization), shaped by the service as there.
          return reject(new ConnectError(`parse binary: ${error instanceof Error ? error.message : String(error)}`, Code.Internal));
        }
        const values = options.contextValues?.() ?? createContextValues();
        if (rawHeaders) values.set(headerLinesKey, headerLinesOf(rawHeaders));
        context = new CallContext(
          route.service,
          route.spec.method,
          `http://${headers[':authority'] ?? 'localhost'}${path}`,
          new RequestHeaders(headers, requestId) as unknown as Headers,
          timeout.timeoutMs,
          values,
        );
        const called = context;
        stream.on('close', () => {
          if (!finished) called.abort(new ConnectError('the client cancelled the call', Code.Canceled));
        });
        try {
          const output = await invokeUnary(route.spec, called, input, route.interceptors);
          finish(undefined, toBinary(route.spec.method.output, output), called.madeResponseHeader, called.madeResponseTrailer);
        } catch (error) {
          finish(ConnectError.from(error), undefined, called.madeResponseHeader);
        }
      }
    },
  };
}
