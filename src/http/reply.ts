import { Http2ServerResponse } from 'node:http2';
import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import { StreamedJson, writeStreamedJson } from './streamed-json.js';

/** A request of either HTTP version, as node:http and node:http2's compatibility API hand it over. */
export type NodeRequest = IncomingMessage | Http2ServerRequest;
/** A response of either HTTP version. */
export type NodeResponse = ServerResponse | Http2ServerResponse;

/**
 * The HTTP/1.1 response of this server's listener: the headers every answer carries (x-request-id,
 * traceparent: `withContextHeaders`) wait here until its head is written. `sendReply` puts them in its
 * one headers object, so Node writes the head from that object alone; a `setHeader` before `writeHead`
 * makes Node re-validate and re-store every header of the head (~4% of a REST read's instructions for
 * the two). Any other writer gets them set just before its head: `writeHead`, which Node's implicit
 * head (a `write` or `end` without one) calls too. HTTP/2's compatibility response has no such fast
 * path and gets them set at once.
 */
export class ContextResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** The request id and traceparent not yet written (empty once written). */
  pendingRequestId = '';
  pendingTraceparent = '';

  override writeHead(
    statusCode: number,
    reasonOrHeaders?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    if (this.pendingRequestId !== '') {
      this.setHeader('x-request-id', this.pendingRequestId);
      this.setHeader('traceparent', this.pendingTraceparent);
      this.pendingRequestId = this.pendingTraceparent = '';
    }
    // Node reads a non-string second argument as the headers.
    return super.writeHead(statusCode, reasonOrHeaders as string, headers);
  }
}

/**
 * Sets the headers every answer of a request carries: on an HTTP/1.1 response of this server, when
 * its head is written (`ContextResponse`); on any other, now.
 */
export function withContextHeaders(res: NodeResponse, requestId: string, traceparent: string): void {
  if (res instanceof ContextResponse) {
    res.pendingRequestId = requestId;
    res.pendingTraceparent = traceparent;
    return;
  }
  res.setHeader('x-request-id', requestId);
  res.setHeader('traceparent', traceparent);
}

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
  if (res instanceof ContextResponse && res.pendingRequestId !== '') {
    headers['x-request-id'] = res.pendingRequestId;
    headers.traceparent = res.pendingTraceparent;
    res.pendingRequestId = res.pendingTraceparent = '';
  }
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
