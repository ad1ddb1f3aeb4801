import pg from 'pg';

/** One consumer of a NOTIFY channel. */
export interface ChannelSubscriber {
  onPayload(payload: string): void;
  /**
   * Called after the LISTEN connection came back from a loss: notifications sent while it was
   * down are gone, so the consumer re-reads what it may have missed.
   */
  onReconnect?(): void;
}

export interface PgListenerOptions {
  /** How to reach PostgreSQL (connect and query timeouts included). */
  client: pg.ClientConfig;
  /** An idle LISTEN connection sees no traffic: a `SELECT 1` this often proves it still works. */
  heartbeatMs: number;
  /** Reconnect delays grow from `minMs` to `maxMs` (doubling, jittered). */
  backoff: { minMs: number; maxMs: number };
  random?: () => number;
}

/**
 * The one LISTEN connection of a process, shared by every channel. PostgreSQL drops
 * notifications for a session that is gone, so when the connection is lost (an error, the server
 * restarting, a heartbeat that got no answer) it reconnects with bounded, jittered backoff, LISTENs
 * on every channel again and tells the subscribers to catch up.
 */
export class PgListener {
  private readonly channels = new Map<string, Set<ChannelSubscriber>>();
  /** The channels the current connection LISTENs on. */
  private readonly listening = new Set<string>();
  private client: pg.Client | undefined;
  private up = false;
  private connecting: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private attempt = 0;
  /** Set once a connection was lost: the next successful one is a reconnect. */
  private lostOnce = false;
  private closed = false;

  constructor(private readonly options: PgListenerOptions) {}

  /** True while every channel is LISTENed on a working connection (or nothing listens). */
  healthy(): boolean {
    if (this.closed) return false;
    return this.channels.size === 0 || this.up;
  }

  /**
   * Subscribes to a channel. Resolves once the channel is LISTENed, or once the first attempt to
   * connect failed: the subscription stays and is LISTENed when the connection comes back.
   */
  async listen(channel: string, subscriber: ChannelSubscriber): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('the database listener is closed');
    let set = this.channels.get(channel);
    if (!set) {
      set = new Set();
      this.channels.set(channel, set);
    }
    set.add(subscriber);
    if (!this.client && !this.retryTimer) await this.connect();
    else if (this.connecting) await this.connecting;
    // A failed LISTEN drops the connection; the reconnect LISTENs on every channel.
    if (this.up) await this.listenOnNewChannels().catch(() => undefined);
    return async () => {
      set.delete(subscriber);
      if (set.size > 0 || this.channels.get(channel) !== set) return;
      this.channels.delete(channel);
      if (this.channels.size === 0) {
        const client = this.up ? this.client : undefined;
        this.disconnect(client === undefined);
        await client?.end().catch(() => undefined);
      } else if (this.up && this.client) {
        this.listening.delete(channel);
        await this.client.query(`UNLISTEN ${quoteIdentifier(channel)}`).catch(() => undefined);
      }
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.channels.clear();
    const client = this.up ? this.client : undefined;
    // A working connection says goodbye politely; a broken one is destroyed.
    this.disconnect(client === undefined);
    await client?.end().catch(() => undefined);
  }

  private connect(): Promise<void> {
    this.connecting ??= this.open().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async open(): Promise<void> {
    const client = new pg.Client({ ...this.options.client, keepAlive: true });
    this.client = client;
    this.listening.clear();
    client.on('error', (error: unknown) => this.lose(client, error));
    client.on('end', () => this.lose(client));
    client.on('notification', (message) => {
      for (const subscriber of this.channels.get(message.channel) ?? []) {
        try {
          subscriber.onPayload(message.payload ?? '');
        } catch {
          // One consumer's bug must not starve the others of their notifications.
        }
      }
    });
    try {
      await client.connect();
      await this.listenOnNewChannels(client);
    } catch (error) {
      this.lose(client, error);
      return;
    }
    if (this.client !== client) return;
    this.up = true;
    this.attempt = 0;
    this.heartbeatTimer = setInterval(() => {
      client.query('SELECT 1').catch((error: unknown) => this.lose(client, error));
    }, this.options.heartbeatMs);
    this.heartbeatTimer.unref();
    if (this.lostOnce) {
      for (const set of this.channels.values()) {
        for (const subscriber of set) {
          try {
            subscriber.onReconnect?.();
          } catch {
            // as above: the others still catch up
          }
        }
      }
    }
  }

  private async listenOnNewChannels(client = this.client): Promise<void> {
    if (!client) return;
    for (const channel of this.channels.keys()) {
      if (this.listening.has(channel)) continue;
      this.listening.add(channel);
      try {
        await client.query(`LISTEN ${quoteIdentifier(channel)}`);
      } catch (error) {
        this.lose(client, error);
        throw error;
      }
    }
  }

  /** The connection is gone or unusable: drop it and try again later. */
  private lose(client: pg.Client, _error?: unknown): void {
    if (this.client !== client) return;
    this.lostOnce = true;
    this.disconnect(true);
    if (!this.closed && this.channels.size > 0) this.scheduleReconnect();
  }

  private disconnect(destroy: boolean): void {
    const client = this.client;
    this.client = undefined;
    this.up = false;
    this.listening.clear();
    clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
    if (client) {
      client.removeAllListeners('notification');
      client.removeAllListeners('end');
      // A broken socket may still report errors; nobody else listens for them.
      client.removeAllListeners('error');
      client.on('error', () => undefined);
      // A black-holed socket never finishes a polite goodbye: destroy it.
      if (destroy) client.connection.stream.destroy();
    }
    if (this.channels.size === 0 || this.closed) {
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
    }
  }

  private scheduleReconnect(): void {
    if (this.retryTimer) return;
    const { minMs, maxMs } = this.options.backoff;
    const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(this.attempt, 20));
    // "Equal jitter": at least half the step, so several processes do not reconnect in lockstep.
    const delay = ceiling / 2 + (this.options.random ?? Math.random)() * (ceiling / 2);
    this.attempt += 1;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.closed && this.channels.size > 0) void this.connect();
    }, delay);
  }
}

function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
