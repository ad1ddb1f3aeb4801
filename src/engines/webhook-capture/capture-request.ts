/**
 * Webhook capture engine: turns what a server saw of one HTTP request (raw header lines, request
 * target, body bytes) into the record the inspector stores, and a stored record into its JSON view.
 * It knows nothing of node:http or express, so every protocol (HTTP/1.1, HTTP/2) and every test
 * feeds it the same plain values; what it builds is the record type the store keeps.
 */
import type { CapturedRecord, HeaderLine } from '../../store/repositories/webhook-records.js';

export type { CapturedRecord };

/** What the transport saw; `rawHeaders` is the flat `[name, value, name, value, …]` list node gives. */
export interface CaptureInput {
  id: string;
  routeId: string;
  receivedAt: Date;
  method: string;
  /** The request target as sent: path plus `?query`. */
  target: string;
  rawHeaders: readonly string[];
  body: BodyBytes;
  remoteAddress: string | undefined;
  /** The trusted proxies the request came through, farthest first (empty: none). */
  proxyChain?: readonly string[];
  httpVersion: string;
}

/** The stored part of a body: the first `limit` bytes, and how many bytes arrived in all. */
export interface BodyBytes {
  bytes: Buffer;
  size: number;
  truncated: boolean;
}

/** Builds the stored record of one request; the body bytes are kept exactly as given. */
export function captureWebhookRequest(input: CaptureInput): CapturedRecord {
  const queryAt = input.target.indexOf('?');
  const headers = headerLines(input.rawHeaders);
  return {
    id: input.id,
    routeId: input.routeId,
    receivedAt: input.receivedAt,
    method: input.method,
    path: queryAt === -1 ? input.target : input.target.slice(0, queryAt),
    query: queryAt === -1 ? '' : input.target.slice(queryAt + 1),
    headers,
    contentType: headers.find(([name]) => name.toLowerCase() === 'content-type')?.[1] ?? null,
    size: input.body.size,
    truncated: input.body.truncated,
    body: input.body.bytes,
    remoteAddress: normaliseAddress(input.remoteAddress),
    proxyChain: input.proxyChain?.length ? input.proxyChain.map(normaliseAddress) : undefined,
    httpVersion: input.httpVersion,
  };
}

/** Pairs node's flat raw header list, keeping order, case and duplicates. */
function headerLines(rawHeaders: readonly string[]): HeaderLine[] {
  const lines: HeaderLine[] = [];
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    lines.push([rawHeaders[index]!, rawHeaders[index + 1]!]);
  }
  return lines;
}

function normaliseAddress(address: string | undefined): string {
  if (!address) return '';
  // An IPv4 peer on a dual-stack socket shows up as ::ffff:a.b.c.d; people expect a.b.c.d.
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/**
 * Collects body chunks up to `limit` bytes and counts the rest, so a huge upload costs no memory
 * beyond the limit and the record still says how large the body really was.
 */
export class BodyCollector {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private received = 0;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    this.received += chunk.length;
    const room = this.limit - this.kept;
    if (room <= 0) return;
    const piece = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(piece);
    this.kept += piece.length;
  }

  finish(): BodyBytes {
    const bytes = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.kept);
    return { bytes, size: this.received, truncated: this.received > this.kept };
  }
}
