import http from 'node:http';
import type { TestServer } from '../../support/app.js';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/**
 * A request through node:http with the header lines exactly as given (fetch would merge repeated
 * headers and refuses methods such as PURGE).
 */
export function rawRequest(url: string, method: string, headers: Array<[string, string]> = [], body?: Buffer | string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    // With raw header lines node adds none of its own, so Host goes first as a client would send it.
    const has = (wanted: string) => headers.some(([name]) => name.toLowerCase() === wanted);
    const { host, hostname, port, origin } = new URL(url);
    const lines = has('host') ? [...headers] : [['Host', host], ...headers];
    if (body !== undefined && !has('content-length') && !has('transfer-encoding')) lines.push(['Content-Length', String(Buffer.byteLength(body))]);
    // The target is sent as written (a URL would percent-encode or rewrite some of its characters).
    const path = url.slice(origin.length) || '/';
    const request = http.request({ hostname, port, path, method, headers: lines.flat(), agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

export async function createRoute(server: TestServer, body?: unknown): Promise<{ routeId: string; url: string; inspectUrl: string; expiresAt: string }> {
  const created = await server.request('POST', '/routes', body === undefined ? {} : { body });
  if (created.status !== 201) throw new Error(`route not created: ${created.status} ${created.text}`);
  return created.body;
}

export interface SseEvent {
  id: string | undefined;
  data: string;
}

/** Opens an event stream and yields its events one by one. */
export function openEventStream(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; contentType: string; next(): Promise<SseEvent>; close(): void }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { accept: 'text/event-stream', ...headers }, agent: false }, (response) => {
      const events: SseEvent[] = [];
      const waiting: Array<(event: SseEvent) => void> = [];
      let buffer = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const lines = block.split('\n');
          const data = lines.filter((line) => line.startsWith('data: ')).map((line) => line.slice(6));
          if (data.length === 0) continue;
          const event = { id: lines.find((line) => line.startsWith('id: '))?.slice(4), data: data.join('\n') };
          const waiter = waiting.shift();
          if (waiter) waiter(event);
          else events.push(event);
        }
      });
      response.on('error', () => undefined);
      resolve({
        status: response.statusCode ?? 0,
        contentType: String(response.headers['content-type'] ?? ''),
        next: () => {
          const ready = events.shift();
          return ready ? Promise.resolve(ready) : new Promise((done) => waiting.push(done));
        },
        close: () => request.destroy(),
      });
    });
    request.on('error', reject);
  });
}
