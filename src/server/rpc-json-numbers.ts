import { Code, ConnectError } from '@connectrpc/connect';
import { wrapUniversalHandler } from './universal-handler.js';
import {
  createAsyncIterable,
  readAllBytes,
  type UniversalHandler,
  type UniversalServerRequest,
  type UniversalServerResponse,
} from '@connectrpc/connect/protocol';
import { codeToHttpStatus, errorToJsonBytes } from '@connectrpc/connect/protocol-connect';
import { findUnsafeNumber } from '../engines/json-numbers/index.js';

/** Connect unary JSON (`application/json`, no `+connect` envelope), uncompressed. */
const UNARY_JSON = /^application\/json(;|$)/i;

export interface UnsafeJsonNumberOptions {
  /** Largest request read (RPC_MAX_MESSAGE_BYTES); a larger one is left to connect, which refuses it. */
  readMaxBytes: number;
  /** Shapes the refusal as the service shapes its errors (the cloud API adds a ServiceError detail). */
  shapeError?(error: ConnectError, requestId: string): ConnectError;
}

/**
 * Connect's JSON codec reads a request with `JSON.parse`, which turns `1e999` into Infinity and rounds
 * integers beyond 2^53 (an int64 page size or resource version sent as a JSON number) without a word.
 * This wrapper reads a unary Connect JSON request (POST body or GET `message`) first and refuses such
 * a number with INVALID_ARGUMENT (HTTP 400) naming the field; other requests pass untouched.
 * Compressed JSON requests are passed on unchecked (connect decompresses them later).
 */
export function refuseUnsafeJsonNumbers(handler: UniversalHandler, options: UnsafeJsonNumberOptions): UniversalHandler {
  const refuse = (req: UniversalServerRequest, error: ConnectError): UniversalServerResponse => {
    const shaped = options.shapeError?.(error, req.header.get('x-request-id') ?? '') ?? error;
    return {
      status: codeToHttpStatus(shaped.code),
      header: new Headers({ 'content-type': 'application/json' }),
      body: createAsyncIterable([errorToJsonBytes(shaped, {})]),
    };
  };
  const wrapped = async (req: UniversalServerRequest): Promise<UniversalServerResponse> => {
    let json: Awaited<ReturnType<typeof unaryJsonOf>>;
    try {
      json = await unaryJsonOf(req, options.readMaxBytes);
    } catch (error) {
      // A body shorter than its Content-Length or over the limit: refused as connect would have.
      return refuse(req, ConnectError.from(error, Code.InvalidArgument));
    }
    if (!json) return handler(req);
    const unsafe = findUnsafeNumber(json.text);
    if (!unsafe) return handler(json.request);
    return refuse(req, new ConnectError(`${unsafe.path || 'message'}: ${unsafe.message}`, Code.InvalidArgument));
  };
  return wrapUniversalHandler(handler, wrapped);
}

/** The JSON text of a unary Connect JSON request and the request to hand on (its body re-readable), or undefined. */
async function unaryJsonOf(req: UniversalServerRequest, readMaxBytes: number): Promise<{ text: string; request: UniversalServerRequest } | undefined> {
  if (req.method === 'GET') {
    const query = new URL(req.url).searchParams;
    if (query.get('encoding') !== 'json' || query.has('compression')) return undefined;
    const message = query.get('message') ?? '';
    const text = query.get('base64') === '1' ? Buffer.from(message, 'base64url').toString('utf8') : message;
    return { text, request: req };
  }
  if (!UNARY_JSON.test(req.header.get('content-type') ?? '')) return undefined;
  const encoding = req.header.get('content-encoding');
  if (encoding && encoding !== 'identity') return undefined;
  const length = Number(req.header.get('content-length') ?? 0);
  if (length > readMaxBytes || !isByteStream(req.body)) return undefined;
  const bytes = await readAllBytes(req.body, readMaxBytes, req.header.get('content-length'));
  return { text: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'), request: { ...req, body: createAsyncIterable([bytes]) } };
}

function isByteStream(body: UniversalServerRequest['body']): body is AsyncIterable<Uint8Array> {
  return typeof body === 'object' && body !== null && Symbol.asyncIterator in body;
}
