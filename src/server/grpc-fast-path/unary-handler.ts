import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { create, type DescMessage, type DescMethod, type DescService, type MessageShape } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  createContextValues,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type ServiceImplSpec,
  type UnaryRequest,
  type UnaryResponse,
} from '@connectrpc/connect';
import { parseTimeout, setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import { encodeGrpcMessage } from '../grpc-message.js';
import { headerLinesKey, headerLinesOf } from '../header-lines.js';

type UnarySpec = Extract<MethodImplSpec, { kind: 'unary' }>;
type AnyFn = Parameters<Interceptor>[0];

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
  maxMessageBytes?: number;
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
  const maxBytes = options.maxMessageBytes ?? 4 * 1024 * 1024;
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
        const head: Record<string, string> = { ':status': '200', 'content-type': 'application/grpc+proto', 'x-request-id': requestId, ...responseHeaders };
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
          stream.once('wantTrailers', () => {
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
          return reject(
            new ConnectError(
              `the request message is not valid protobuf (${route.spec.method.input.typeName}): ${error instanceof Error ? error.message : String(error)}`,
              Code.InvalidArgument,
            ),
          );
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
        stream.once('close', () => {
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

/**
 * The context of one call, as connect's `createHandlerContext` makes it, minus its per-call costs:
 * the AbortSignal (connect links three AbortControllers per call) is made only when something reads
 * it, which no unary method here does; the request header is used as given (connect copies it); the
 * deadline timer is set only for a `grpc-timeout` and cleared when the call ends.
 */
class CallContext implements HandlerContext {
  readonly requestMethod = 'POST';
  readonly protocolName = 'grpc';
  /** Made when first read: most calls set no response header or trailer of their own. */
  madeResponseHeader: Headers | undefined;
  madeResponseTrailer: Headers | undefined;
  private controller: AbortController | undefined;
  private abortReason: { reason: unknown } | undefined;
  private readonly deadline: number | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly service: DescService,
    readonly method: DescMethod,
    readonly url: string,
    readonly requestHeader: Headers,
    timeoutMs: number | undefined,
    readonly values: ContextValues,
  ) {
    if (timeoutMs !== undefined) {
      this.deadline = Date.now() + timeoutMs;
      const expire = () => this.abort(new ConnectError('the operation timed out', Code.DeadlineExceeded));
      if (timeoutMs <= 0) expire();
      else this.timer = setTimeout(expire, timeoutMs);
    }
  }

  get responseHeader(): Headers {
    return (this.madeResponseHeader ??= new Headers());
  }

  get responseTrailer(): Headers {
    return (this.madeResponseTrailer ??= new Headers());
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason) this.controller.abort(this.abortReason.reason);
    }
    return this.controller.signal;
  }

  readonly timeoutMs = (): number | undefined => (this.deadline === undefined ? undefined : this.deadline - Date.now());

  abort(reason: unknown): void {
    this.end();
    if (this.abortReason) return;
    this.abortReason = { reason };
    this.controller?.abort(reason);
  }

  /** The call is over: no deadline to watch any more. */
  end(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/**
 * connect's `invokeUnaryImplementation` (same request and response shapes through the same
 * interceptors, the output normalized with `create`, response header and trailer copied back),
 * except that the request's signal is read from the context only when someone asks for it.
 */
async function invokeUnary(spec: UnarySpec, context: CallContext, input: MessageShape<DescMessage>, interceptors: readonly Interceptor[]) {
  const method = spec.method;
  let next: AnyFn = async (anyRequest) => {
    const req = anyRequest as UnaryRequest;
    // The implementation sees the request as the interceptors left it (connect's mergeRequest).
    const same = req.header === context.requestHeader && req.contextValues === context.values && req.service === context.service;
    const implContext: HandlerContext = same
      ? context
      : {
          method: context.method,
          protocolName: context.protocolName,
          requestMethod: context.requestMethod,
          url: context.url,
          timeoutMs: context.timeoutMs,
          responseHeader: context.responseHeader,
          responseTrailer: context.responseTrailer,
          service: req.service,
          requestHeader: req.header,
          values: req.contextValues,
          get signal() {
            return req.signal;
          },
        };
    const output = await spec.impl(req.message, implContext);
    const response: UnaryResponse = {
      stream: false,
      service: method.parent,
      method,
      // The context's own header and trailer, made only if someone reads them.
      get header() {
        return context.responseHeader;
      },
      get trailer() {
        return context.responseTrailer;
      },
      message: create(method.output, output),
    };
    answered = response;
    return response;
  };
  let answered: UnaryResponse | undefined;
  for (let index = interceptors.length - 1; index >= 0; index--) next = interceptors[index]!(next);
  const request: UnaryRequest = {
    stream: false,
    message: input,
    method,
    service: method.parent,
    requestMethod: context.requestMethod,
    url: context.url,
    header: context.requestHeader,
    contextValues: context.values,
    get signal() {
      return context.signal;
    },
  };
  const response = (await next(request)) as UnaryResponse;
  // An interceptor that answered another header or trailer (a replay) replaces the context's, as in connect.
  if (response !== answered) {
    copyHeaders(response.header, context.responseHeader);
    copyHeaders(response.trailer, context.responseTrailer);
  }
  return response.message;
}

function copyHeaders(from: Headers, to: Headers): void {
  if (from === to) return;
  for (const key of [...to.keys()]) to.delete(key);
  from.forEach((value, key) => to.set(key, value));
}

/** Headers' own methods, called on the subclass below (its typings declare them as properties, which TypeScript will not let a subclass override). */
const BASE = Headers.prototype;
/** A header name as Headers accepts it (an HTTP token); anything else makes Headers throw. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers strips leading and trailing HTTP whitespace from every value. */
const EDGE_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;

/**
 * The request header of a call: a real `Headers` holding what the HTTP/2 request sent (pseudo-headers
 * left out) and the server's `x-request-id`, filled from Node's header object only when it is first
 * changed or listed. `get` and `has` before that answer from Node's object exactly as the filled
 * Headers would (names case-insensitive, values trimmed, repeated values joined by ", "): a unary call
 * usually reads one header (authorization), and building the Headers cost ~2 µs a call.
 */
class RequestHeaders extends (Headers as new () => object) {
  #raw: IncomingHttpHeaders | undefined;
  readonly #requestId: string;

  constructor(raw: IncomingHttpHeaders, requestId: string) {
    super();
    this.#raw = raw;
    this.#requestId = requestId;
  }

  #fill(): void {
    const raw = this.#raw;
    if (raw === undefined) return;
    this.#raw = undefined;
    for (const key in raw) {
      const value = raw[key];
      if (key.charCodeAt(0) === 58 /* ':' */ || value === undefined || key === 'x-request-id') continue;
      if (Array.isArray(value)) for (const item of value) BASE.append.call(this, key, item);
      else BASE.append.call(this, key, value);
    }
    BASE.set.call(this, 'x-request-id', this.#requestId);
  }

  /** The value the filled Headers would hold for `name` (null: none); undefined once filled or for a name Headers refuses. */
  #lookup(name: string): string | null | undefined {
    const raw = this.#raw;
    if (raw === undefined || !TOKEN.test(name)) return undefined;
    const key = name.toLowerCase();
    if (key === 'x-request-id') return this.#requestId;
    const value = raw[key];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.map((item) => item.replace(EDGE_WHITESPACE, '')).join(', ') : value.replace(EDGE_WHITESPACE, '');
  }

  get(name: string): string | null {
    const value = this.#lookup(name);
    if (value !== undefined) return value;
    this.#fill();
    return BASE.get.call(this, name);
  }

  has(name: string): boolean {
    const value = this.#lookup(name);
    if (value !== undefined) return value !== null;
    this.#fill();
    return BASE.has.call(this, name);
  }

  append(name: string, value: string): void {
    this.#fill();
    BASE.append.call(this, name, value);
  }

  set(name: string, value: string): void {
    this.#fill();
    BASE.set.call(this, name, value);
  }

  delete(name: string): void {
    this.#fill();
    BASE.delete.call(this, name);
  }

  getSetCookie(): string[] {
    this.#fill();
    return BASE.getSetCookie.call(this);
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    this.#fill();
    BASE.forEach.call(this, callback, thisArg);
  }

  keys(): ReturnType<Headers['keys']> {
    this.#fill();
    return BASE.keys.call(this);
  }

  values(): ReturnType<Headers['values']> {
    this.#fill();
    return BASE.values.call(this);
  }

  entries(): ReturnType<Headers['entries']> {
    this.#fill();
    return BASE.entries.call(this);
  }

  [Symbol.iterator](): ReturnType<Headers['entries']> {
    this.#fill();
    return BASE[Symbol.iterator].call(this);
  }
}
