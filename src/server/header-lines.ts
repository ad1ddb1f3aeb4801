import { createContextKey, type HandlerContext } from '@connectrpc/connect';

/** The separate field lines a client sent for one header name (lowercase), in order. */
export type HeaderLines = (name: string) => string[];

/**
 * The request's header lines as sent, before Node and `Headers` join repeated ones with ", ".
 * A header whose values are parsed one by one (`X-ResetMask`, as the Go SDK's grpcheader does)
 * needs them apart: joined, `["*", ""]` would read as the malformed `*, `.
 */
export const headerLinesKey = createContextKey<HeaderLines | undefined>(undefined, { description: 'request header lines as sent' });

/** Header lines from Node's `rawHeaders` (`[name, value, name, value, …]`), scanned only when asked. */
export function headerLinesOf(rawHeaders: readonly string[]): HeaderLines {
  return (name) => {
    const out: string[] = [];
    for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
      if (rawHeaders[index]!.toLowerCase() === name) out.push(rawHeaders[index + 1]!);
    }
    return out;
  };
}

/**
 * The lines of one request header: the separate lines when the transport kept them (every
 * server transport does), else the joined `Headers` value as one line (in-memory transports),
 * else none.
 */
export function requestHeaderLines(context: Pick<HandlerContext, 'values' | 'requestHeader'>, name: string): string[] {
  const lines = context.values.get(headerLinesKey);
  if (lines) return lines(name);
  const joined = context.requestHeader.get(name);
  return joined === null ? [] : [joined];
}
