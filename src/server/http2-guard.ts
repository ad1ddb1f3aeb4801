import http2 from 'node:http2';
import { clientKey } from '../services/client-address.js';

const { NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_NO_ERROR, NGHTTP2_REFUSED_STREAM } = http2.constants;

export interface Http2GuardOptions {
  /** Streams one session may open per second; more is abuse (rapid opening). */
  maxStreamsPerSecond: number;
  /** Streams of one session that may end in a reset per second; more is abuse (rapid reset). */
  maxResetsPerSecond: number;
  /** Streams open at once from one client address, over all its sessions; beyond it new ones are refused. */
  maxStreamsPerAddress: number;
  /** A stream whose buffered answer does not shrink for this long (a reader that never opens its window) is reset. */
  stallTimeoutMs: number;
  /** After one of its sessions was closed for abuse, an address's new connections are refused for this long. */
  cooldownMs: number;
  now?: () => number;
}

/** Counts in the current one-second window. */
interface RateWindow {
  startedAt: number;
  streams: number;
  resets: number;
}

interface SessionState {
  address: AddressState;
  rate: RateWindow;
}

interface AddressState {
  key: string;
  sessions: Set<http2.ServerHttp2Session>;
  openStreams: number;
  rate: RateWindow;
  cooldownUntil: number;
}

/** A stream whose answer is buffered: how much, and since when it has not shrunk. */
interface Pending {
  session: http2.ServerHttp2Session;
  length: number;
  since: number;
}

/**
 * The HTTP/2 abuse bounds that Node's own settings do not give (issue 21): a rate of new streams
 * and of resets per session (rapid reset, CVE-2023-44487, over any number of connections), open
 * streams per client address over all its sessions, and a deadline for answers a client does not
 * read (a flow-control window held at 0 pins the answer in memory). A session that breaks a rate
 * is sent GOAWAY ENHANCE_YOUR_CALM and destroyed at once, and its address is refused new
 * connections for a cool-down, so a flood costs the server a bounded amount of work per address.
 * A stream reset for stalling counts as a reset of its session. Addresses are counted by
 * `clientKey` (IPv6 per /64). A trusted proxy's connection carries many clients the guard cannot
 * tell apart, so each of its sessions counts as an address of its own (`watch`'s `pooled`).
 */
export class Http2Guard {
  private readonly addresses = new Map<string, AddressState>();
  private readonly sessions = new WeakMap<http2.ServerHttp2Session, SessionState>();
  private readonly pending = new Map<http2.ServerHttp2Stream, Pending>();
  private readonly now: () => number;
  private stallTimer: NodeJS.Timeout | undefined;
  /** Numbers the sessions of trusted proxies, which are not pooled by address. */
  private unpooled = 0;

  constructor(private readonly options: Http2GuardOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Whether a new connection from `address` is refused (its address is cooling down after abuse). */
  refuses(address: string | undefined): boolean {
    const state = this.addresses.get(clientKey(address));
    if (!state || state.cooldownUntil <= this.now()) return false;
    return true;
  }

  /**
   * Watches a new session from `address`: its streams, resets and stalled answers. Unless `pooled`
   * is false (a trusted proxy's session), it shares the address's bounds and cool-down with every
   * other session of that address.
   */
  watch(session: http2.ServerHttp2Session, address: string | undefined, pooled = true): void {
    const key = pooled ? clientKey(address) : `proxy session ${++this.unpooled}`;
    let state = this.addresses.get(key);
    if (!state) {
      state = { key, sessions: new Set(), openStreams: 0, rate: freshWindow(this.now()), cooldownUntil: 0 };
      this.addresses.set(key, state);
    }
    const addressState = state;
    addressState.sessions.add(session);
    const sessionState: SessionState = { address: addressState, rate: freshWindow(this.now()) };
    this.sessions.set(session, sessionState);
    session.once('close', () => {
      addressState.sessions.delete(session);
      this.forget(addressState);
    });
    // Before the server's own listener, so a refused stream is closed before anything serves it.
    session.prependListener('stream', (stream: http2.ServerHttp2Stream) => this.admit(session, sessionState, stream));
  }

  /** Stops the stall checks (server shutdown). */
  stop(): void {
    clearInterval(this.stallTimer);
    this.stallTimer = undefined;
  }

  private admit(session: http2.ServerHttp2Session, state: SessionState, stream: http2.ServerHttp2Stream): void {
    const address = state.address;
    const sessionRate = this.rateOf(state.rate);
    const addressRate = this.rateOf(address.rate);
    sessionRate.streams++;
    addressRate.streams++;
    if (sessionRate.streams > this.options.maxStreamsPerSecond || addressRate.streams > this.options.maxStreamsPerSecond * ADDRESS_FACTOR) {
      refuse(stream, NGHTTP2_REFUSED_STREAM);
      this.abusive(session);
      return;
    }
    if (address.openStreams >= this.options.maxStreamsPerAddress) {
      refuse(stream, NGHTTP2_REFUSED_STREAM);
      return;
    }
    address.openStreams++;
    stream.once('close', () => {
      address.openStreams--;
      this.pending.delete(stream);
      // Reset by the client (CANCEL, rapid reset) or by this guard for stalling; NO_ERROR is a normal end.
      if (stream.rstCode !== undefined && stream.rstCode !== NGHTTP2_NO_ERROR && stream.rstCode !== NGHTTP2_REFUSED_STREAM) this.reset(session, state);
    });
    this.watchStalls(session, stream);
  }

  private reset(session: http2.ServerHttp2Session, state: SessionState): void {
    if (session.destroyed) return;
    const sessionRate = this.rateOf(state.rate);
    const addressRate = this.rateOf(state.address.rate);
    sessionRate.resets++;
    addressRate.resets++;
    if (sessionRate.resets > this.options.maxResetsPerSecond || addressRate.resets > this.options.maxResetsPerSecond * ADDRESS_FACTOR) this.abusive(session);
  }

  /** Closes an abusive session at once, and every other session of its address if the address broke its bound. */
  private abusive(session: http2.ServerHttp2Session): void {
    const state = this.sessions.get(session);
    if (!state) return;
    const address = state.address;
    address.cooldownUntil = this.now() + this.options.cooldownMs;
    const addressRate = this.rateOf(address.rate);
    const wholeAddress =
      addressRate.resets > this.options.maxResetsPerSecond * ADDRESS_FACTOR || addressRate.streams > this.options.maxStreamsPerSecond * ADDRESS_FACTOR;
    for (const victim of wholeAddress ? [...address.sessions] : [session]) {
      if (victim.destroyed) continue;
      victim.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
      victim.destroy();
    }
  }

  /** Tracks a stream's buffered answer; the stall check resets it if the client leaves it unread. */
  private watchStalls(session: http2.ServerHttp2Session, stream: http2.ServerHttp2Stream): void {
    this.pending.set(stream, { session, length: 0, since: 0 });
    this.stallTimer ??= setInterval(() => this.checkStalls(), Math.max(10, Math.min(1000, Math.floor(this.options.stallTimeoutMs / 4)))).unref();
  }

  private checkStalls(): void {
    const now = this.now();
    for (const [stream, pending] of this.pending) {
      const length = stream.writableLength;
      if (length === 0) {
        pending.length = 0;
        continue;
      }
      // Progress is the buffer shrinking; a stream that only grows (or holds one large write) is stalled.
      if (pending.length === 0 || length < pending.length) pending.since = now;
      pending.length = length;
      if (now - pending.since >= this.options.stallTimeoutMs) {
        this.pending.delete(stream);
        refuse(stream, NGHTTP2_CANCEL);
      }
    }
    if (this.pending.size === 0) this.stop();
  }

  private rateOf(window: RateWindow): RateWindow {
    const now = this.now();
    if (now - window.startedAt >= 1000) {
      window.startedAt = now;
      window.streams = 0;
      window.resets = 0;
    }
    return window;
  }

  /** An address without sessions is forgotten once its cool-down is over (the map stays bounded by live clients). */
  private forget(address: AddressState): void {
    if (address.sessions.size > 0) return;
    const left = address.cooldownUntil - this.now();
    if (left <= 0) {
      this.addresses.delete(address.key);
      return;
    }
    setTimeout(() => {
      if (address.sessions.size === 0 && this.addresses.get(address.key) === address) this.addresses.delete(address.key);
    }, left).unref();
  }
}

/** One address may use this many times a session's rates over all its sessions. */
const ADDRESS_FACTOR = 4;

function freshWindow(now: number): RateWindow {
  return { startedAt: now, streams: 0, resets: 0 };
}

/** Resets a stream; its 'error' (any code but NO_ERROR emits one) is this guard's doing and needs no handling. */
function refuse(stream: http2.ServerHttp2Stream, code: number): void {
  stream.on('error', () => undefined);
  stream.close(code);
}
