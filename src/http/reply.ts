import { Http2ServerResponse } from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import { StreamedJson, writeStreamedJson } from './streamed-json.js';

/** A request of either HTTP version, as node:http and node:http2's compatibility API hand it over. */
export type NodeRequest = IncomingMessage | Http2ServerRequest;
/** A response of either HTTP version. */
export type NodeResponse = ServerResponse | Http2ServerResponse;

/**
 * One HTTP answer: JSON unless the body is raw bytes (then `contentType`, or a Content-Type among
 * `headers`, names them) or a `StreamedJson` (JSON produced as the client reads it).
 */
export interface RestReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  contentType?: string;
}

/**
 * The one writer of every HTTP answer the server makes (contract engines, pages, assets, health, the
 * route table's 404/405, capture): JSON unless the body is raw bytes, a Content-Length always (no
 * chunking), HEAD gets the status and headers only. A 204 has no Content-Length (RFC 9110 §8.6), nor
 * a 304 (it would describe the cached body). A `StreamedJson` body is written as the client reads it,
 * without Content-Length; if producing it fails after the head was sent, the response is destroyed and
 * `onStreamError` told. Event streams are the other exception: they write as they go.
 */
export function sendReply(
  res: NodeResponse,
  reply: RestReply,
  commonHeaders: Record<string, string> | undefined,
  head: boolean,
  onStreamError?: (error: unknown) => void,
): void {
  // One headers object, filled in place (the hot path allocates no merged copies).
  const headers: Record<string, string | number> = {};
  if (commonHeaders) for (const name in commonHeaders) headers[name] = commonHeaders[name] as string;
  if (reply.headers) for (const name in reply.headers) headers[name] = reply.headers[name] as string;
  if (reply.status === 413 && !(res instanceof Http2ServerResponse)) headers.connection = 'close';
  let payload: Buffer | string = '';
  if (reply.body instanceof StreamedJson) {
    headers['content-type'] = reply.contentType ?? 'application/json; charset=utf-8';
    (res as ServerResponse).writeHead(reply.status, headers);
    writeStreamedJson(res, reply.body, head).catch((error: unknown) => onStreamError?.(error));
    return;
  }
  if (Buffer.isBuffer(reply.body)) {
    payload = reply.body;
    // Bytes keep the type their headers give (a webhook route's own answer may have none).
    if (reply.contentType !== undefined) headers['content-type'] = reply.contentType;
  } else if (reply.body !== undefined) {
    payload = JSON.stringify(reply.body);
    headers['content-type'] = reply.contentType ?? 'application/json; charset=utf-8';
  }
  if (reply.status !== 204 && reply.status !== 304) headers['content-length'] = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
  (res as ServerResponse).writeHead(reply.status, headers);
  if (head || reply.status === 204 || reply.status === 304) res.end();
  else res.end(payload);
}

/** The path of a request target, without its query string. */
export function pathOf(url: string | undefined): string {
  const target = url ?? '/';
  const queryAt = target.indexOf('?');
  return queryAt === -1 ? target : target.slice(0, queryAt);
}
