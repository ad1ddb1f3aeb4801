import { isUtf8 } from 'node:buffer';
import type { CapturedRecord } from './capture-request.js';

/**
 * Headers a replay must not copy: the connection's own (hop-by-hop, RFC 9110 §7.6.1), HTTP/2
 * pseudo-headers, and the ones the sending client recomputes (`Host`, `Content-Length`).
 */
const NOT_REPLAYED = new Set(['host', 'content-length', 'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);

/** Whether a captured header line is sent again on a replay or a forward. */
export function isReplayedHeader(name: string): boolean {
  return !name.startsWith(':') && !NOT_REPLAYED.has(name.toLowerCase());
}

/**
 * Where a capture goes when replayed to `target`: the target's path with the capture's sub-path
 * (the part after `/<routeId>`) appended, and the capture's query after the target's own.
 */
export function replayUrl(target: string, capture: Pick<CapturedRecord, 'routeId' | 'path' | 'query'>): string {
  const url = new URL(target);
  const prefix = `/${capture.routeId}`;
  const subPath = capture.path.toLowerCase().startsWith(prefix) ? capture.path.slice(prefix.length) : capture.path;
  const base = url.pathname.endsWith('/') && subPath.startsWith('/') ? url.pathname.slice(0, -1) : url.pathname;
  const query = [url.search.slice(1), capture.query].filter((part) => part !== '').join('&');
  return `${url.origin}${base}${subPath}${query === '' ? '' : `?${query}`}`;
}

export type HarEntry = {
  startedDateTime: string;
  time: number;
  request: {
    method: string;
    url: string;
    httpVersion: string;
    cookies: never[];
    headers: Array<{ name: string; value: string }>;
    queryString: Array<{ name: string; value: string }>;
    postData?: { mimeType: string; text: string; encoding?: 'base64' };
    headersSize: number;
    bodySize: number;
    comment?: string;
  };
  response: {
    status: number;
    statusText: string;
    httpVersion: string;
    cookies: never[];
    headers: never[];
    content: { size: number; mimeType: string };
    redirectURL: string;
    headersSize: number;
    bodySize: number;
  };
  cache: Record<string, never>;
  timings: { send: number; wait: number; receive: number };
  comment?: string;
};

/**
 * One capture as a HAR 1.2 entry (request side only; the response is the route's, not recorded).
 * `captureUrl` is the URL the request was sent to (this server's origin and the captured path).
 * The body is `postData.text`: text when valid UTF-8, else base64 with `encoding: "base64"` (the
 * extension HAR readers such as Chrome's and Firefox's use), so binary bodies round-trip.
 * `bodyOmitted`: a list left the body out; the entry says so and where to get it.
 */
export function toHarEntry(capture: CapturedRecord, origin: string, bodyOmitted = false): HarEntry {
  const query = capture.query === '' ? '' : `?${capture.query}`;
  const entry: HarEntry = {
    startedDateTime: capture.receivedAt.toISOString(),
    time: 0,
    request: {
      method: capture.method,
      url: `${origin}${capture.path}${query}`,
      httpVersion: `HTTP/${capture.httpVersion}`,
      cookies: [],
      headers: capture.headers.map(([name, value]) => ({ name, value })),
      queryString: [...new URLSearchParams(capture.query)].map(([name, value]) => ({ name, value })),
      headersSize: -1,
      bodySize: bodyOmitted ? -1 : capture.body.length,
    },
    response: {
      status: 0,
      statusText: '',
      httpVersion: '',
      cookies: [],
      headers: [],
      content: { size: 0, mimeType: 'x-unknown' },
      redirectURL: '',
      headersSize: -1,
      bodySize: -1,
    },
    cache: {},
    timings: { send: 0, wait: 0, receive: 0 },
  };
  const mimeType = capture.contentType ?? 'application/octet-stream';
  if (bodyOmitted) {
    entry.request.comment = `body of ${capture.size} bytes left out of this export: ${origin}/inspect/${capture.routeId}/requests/${capture.id}/raw`;
  } else if (capture.body.length > 0) {
    entry.request.postData = isUtf8(capture.body)
      ? { mimeType, text: capture.body.toString('utf8') }
      : { mimeType, text: capture.body.toString('base64'), encoding: 'base64' };
    if (capture.truncated) entry.request.comment = `body truncated: ${capture.size} bytes received, the first ${capture.body.length} stored`;
  }
  return entry;
}

/** A HAR 1.2 document holding `entries`. */
export function harDocument(entries: HarEntry[]) {
  return { log: { version: '1.2', creator: { name: 'webhook-inspector', version: '1.0.0' }, entries } };
}

/**
 * A POSIX shell command that sends the capture again to `url` with curl, byte for byte: the method,
 * the replayed header lines in order with duplicates, and the stored body written by `printf` from
 * octal escapes (no here-document, which would add a newline). curl's own default headers
 * (User-Agent, Accept, Content-Type for data, Expect) are removed when the capture had none, so the
 * receiver sees what the sender sent.
 */
export function toCurlCommand(capture: CapturedRecord, url: string): string {
  const lines: string[] = [];
  if (capture.truncated) lines.push(`# the body was truncated when captured: ${capture.size} bytes received, ${capture.body.length} stored and sent`);
  const sent = capture.headers.filter(([name]) => isReplayedHeader(name));
  const has = (wanted: string) => sent.some(([name]) => name.toLowerCase() === wanted);
  const hasBody = capture.body.length > 0 || capture.headers.some(([name]) => /^(content-length|transfer-encoding)$/i.test(name));
  const args = ['curl', '--silent', '--show-error', '--globoff', '--path-as-is', '-X', quote(capture.method), quote(url)];
  for (const [name, value] of sent) args.push('-H', quote(value === '' ? `${name};` : `${name}: ${value}`));
  for (const name of ['User-Agent', 'Accept', ...(hasBody ? ['Content-Type', 'Expect'] : [])]) {
    if (!has(name.toLowerCase())) args.push('-H', quote(`${name}:`));
  }
  if (hasBody) args.push('--data-binary', '@-');
  const command = args.join(' ');
  lines.push(hasBody ? `printf '${printfEscaped(capture.body)}' | ${command}` : command);
  return `${lines.join('\n')}\n`;
}

/** Shell single quotes (a `'` inside becomes `'\''`). */
function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** Bytes as a printf format inside single quotes: printable ASCII as is, everything else `\ooo`. */
function printfEscaped(bytes: Buffer): string {
  let out = '';
  for (const byte of bytes) {
    const printable = byte >= 0x20 && byte < 0x7f && byte !== 0x27 && byte !== 0x25 && byte !== 0x5c;
    out += printable ? String.fromCharCode(byte) : `\\${byte.toString(8).padStart(3, '0')}`;
  }
  return out;
}
