import { randomFillSync } from 'node:crypto';

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` header, parsed and
 * made here rather than through the OpenTelemetry SDK. The server records no spans; it joins the
 * caller's trace so that its log lines can be found by trace id, and hands the trace on.
 */
export interface TraceContext {
  /** 32 lowercase hex digits, never all zero. */
  traceId: string;
  /** This request's span: 16 lowercase hex digits, new for every request. */
  spanId: string;
  /** The caller's span, when the request carried a valid `traceparent`. */
  parentSpanId: string | undefined;
  /** Two hex digits; the sampled bit (01) is kept from the caller. */
  flags: string;
}

// version-traceid-parentid-flags; a future version may append fields after one more dash.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * Parses a `traceparent` header as the W3C rules say a receiver must: version ff and all-zero ids
 * are invalid, version 00 has exactly four fields, a higher version is read by its first four.
 * Anything invalid (or several headers) is ignored, as if none was sent.
 */
export function parseTraceparent(header: string | string[] | undefined): { traceId: string; parentSpanId: string; flags: string } | undefined {
  if (typeof header !== 'string' || header.length > 512) return undefined;
  const match = TRACEPARENT.exec(header.trim());
  if (!match) return undefined;
  const [, version, traceId, parentSpanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE || parentSpanId === ZERO_SPAN) return undefined;
  return { traceId, parentSpanId, flags };
}

/** The trace context of one request: the caller's trace with a new span, or a new trace. */
export function traceContextOf(header: string | string[] | undefined): TraceContext {
  const parent = parseTraceparent(header);
  const spanId = randomHex(8, ZERO_SPAN);
  if (parent) return { traceId: parent.traceId, spanId, parentSpanId: parent.parentSpanId, flags: parent.flags };
  // Nothing recorded this trace's spans: not sampled.
  return { traceId: randomHex(16, ZERO_TRACE), spanId, parentSpanId: undefined, flags: '00' };
}

/** The `traceparent` of the response: this request's span, version 00. */
export function formatTraceparent(context: TraceContext): string {
  return `00-${context.traceId}-${context.spanId}-${context.flags}`;
}

/** The fields every log line of a request carries (pino mixin and the request line). */
export function traceLogFields(context: TraceContext): Record<string, string> {
  const fields: Record<string, string> = { trace_id: context.traceId, span_id: context.spanId };
  if (context.parentSpanId) fields.parent_span_id = context.parentSpanId;
  return fields;
}

/**
 * Random bytes come from a pool refilled 4 KiB at a time: a `randomBytes` call per id (two per
 * request) was ~3% of a request's CPU in the REST profile, as node's own randomUUID pools its bytes.
 */
const POOL = Buffer.alloc(4096);
let poolOffset = POOL.length;

function randomHex(bytes: number, zero: string): string {
  for (;;) {
    if (poolOffset + bytes > POOL.length) {
      randomFillSync(POOL);
      poolOffset = 0;
    }
    const value = POOL.toString('hex', poolOffset, poolOffset + bytes);
    poolOffset += bytes;
    if (value !== zero) return value;
  }
}
