import net from 'node:net';
import { scratchDatabase } from '../../scripts/support/fresh-store.js';

/**
 * A TCP proxy in front of PostgreSQL that a test can break: `down()` closes the port and cuts every
 * connection (a crashed or restarting server), `blackHole()` accepts connections and forwards
 * nothing either way (a network partition: no error, just silence), `up()` restores service.
 */
export class TcpProxy {
  private readonly sockets = new Set<net.Socket>();
  private server: net.Server;
  private holding = false;

  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
    server: net.Server,
  ) {
    this.server = server;
  }

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const server = net.createServer();
    const port = await listen(server, 0);
    const proxy = new TcpProxy(target, port, server);
    server.on('connection', (socket) => proxy.accept(socket));
    return proxy;
  }

  /** The server is gone: connections are cut and new ones refused. */
  async down(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.cutAll();
    });
  }

  /** Every packet is lost, in both directions, on open and new connections alike. */
  blackHole(): void {
    this.holding = true;
    for (const socket of this.sockets) {
      socket.unpipe();
      socket.pause();
    }
  }

  /** Service again: held connections are cut (their state is unknown), new ones are forwarded. */
  async up(): Promise<void> {
    if (this.holding) {
      this.holding = false;
      this.cutAll();
    }
    if (!this.server.listening) {
      const server = net.createServer();
      server.on('connection', (socket) => this.accept(socket));
      await listen(server, this.port);
      this.server = server;
    }
  }

  async close(): Promise<void> {
    this.cutAll();
    if (this.server.listening) await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    this.track(client);
    if (this.holding) return;
    const upstream = net.connect(this.target.port, this.target.host);
    this.track(upstream);
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', cut);
    upstream.on('close', cut);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  private track(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => this.sockets.delete(socket));
  }

  private cutAll(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }
}

function listen(server: net.Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

/** A fresh database cloned from the migrated template (as test/support/app.ts does), reached directly and through a proxy. */
export async function cloneTemplateDatabase(adminUrl: string): Promise<{ directUrl: string; drop(): Promise<void> }> {
  const database = await scratchDatabase(adminUrl, 'outage', process.env.TEST_TEMPLATE_DB);
  return { directUrl: database.url, drop: database.drop };
}

/** The same URL with its host and port replaced by the proxy's. */
export function viaProxy(url: string, proxy: TcpProxy): string {
  const proxied = new URL(url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  return proxied.toString();
}

/** Polls a condition until it holds (bounded): for states only observable by asking, like /readyz. */
export async function eventually<T>(probe: () => Promise<T>, holds: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (holds(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
