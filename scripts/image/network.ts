/**
 * The host as the containers of `npm run test:image` reach it: a TCP relay to the host's PostgreSQL
 * (which listens on 127.0.0.1 only) on an address of the containers' bridge, and HTTP polling.
 */
import { request } from 'node:http';
import { createConnection, createServer, type Server } from 'node:net';

/** Private (RFC 1918) IPv4 peers only: podman's bridges. Anything else is refused at once. */
function privatePeer(address: string | undefined): boolean {
  const v4 = (address ?? '').replace(/^::ffff:/, '');
  const [a = 0, b = 0] = v4.split('.').map(Number);
  return a === 10 || (a === 172 && b >= 16 && b < 32) || (a === 192 && b === 168);
}

export interface Relay {
  port: number;
  close(): Promise<void>;
}

/**
 * Listens on `host` (a bridge gateway, or 0.0.0.0 for every bridge) and pipes each connection from a
 * container to `target` on this machine's loopback.
 */
export async function startRelay(host: string, target: { host: string; port: number }): Promise<Relay> {
  const sockets = new Set<import('node:net').Socket>();
  const server: Server = createServer((client) => {
    if (!privatePeer(client.remoteAddress)) {
      client.destroy();
      return;
    }
    const upstream = createConnection(target);
    sockets.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, host, resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('relay: no port');
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * One GET with exactly `headers`: the status, body (as sent: not decoded) and Content-Encoding, or
 * status 0 when the connection failed.
 */
export function get(
  url: string,
  timeoutMs = 3000,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; encoding?: string | undefined }> {
  return new Promise((resolve) => {
    const req = request(url, { timeout: timeoutMs, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, encoding: res.headers['content-encoding'] }));
      res.on('error', () => resolve({ status: 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

/** Polls `url` until it answers 200, for at most `boundMs`; the milliseconds it took, or undefined. */
export async function waitFor200(url: string, boundMs: number, stillRunning: () => Promise<boolean> = async () => true): Promise<number | undefined> {
  const started = Date.now();
  while (Date.now() - started < boundMs) {
    if ((await get(url)).status === 200) return Date.now() - started;
    if (!(await stillRunning())) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return undefined;
}
