import type http from 'node:http';
import type http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import type { Http2Guard } from './http2-guard.js';
import { readProxyHeader } from './proxy-protocol.js';
import { PROXIED_SOURCE, connectionAddressOf, proxiedSourceOf } from '../http/request-client.js';
import { inRanges, resolveClientAddress, type TrustProxy } from '../services/client-address.js';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/** A TLS record starts with its content type: 22 for the handshake (the ClientHello). */
const TLS_HANDSHAKE = 0x16;

/**
 * The answer to plain HTTP on the TLS port, where a client would otherwise get an empty reply: what
 * nginx does ("400 The plain HTTP request was sent to HTTPS port"), with the fix in the body.
 */
const PLAIN_HTTP_ON_TLS = (() => {
  const body = 'This port speaks HTTPS only (TLS_CERT is set): the plain HTTP request was sent to the HTTPS port. Use https:// instead of http://.\n';
  return [
    'HTTP/1.1 400 Bad Request',
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
})();

export interface OnePortOptions {
  /** Serves HTTP/1.x (created without a request listener). Its own headersTimeout, requestTimeout and keepAliveTimeout apply. */
  http1: http.Server;
  /**
   * Answers an HTTP/1.x request. Called for every request until shutdown begins; after that, and on a
   * connection whose last response has been decided, a request is refused unexecuted (never called).
   */
  serveHttp1(req: http.IncomingMessage, res: http.ServerResponse): void;
  /** Serves HTTP/2 (cleartext prior knowledge, or TLS with ALPN h2). */
  http2: http2.Http2Server;
  tls?: { cert: string; key: string };
  /** Cleartext: the first bytes must arrive within this; TLS: the handshake must finish within it. */
  firstByteTimeoutMs: number;
  /** An HTTP/2 session without frames for this long gets a GOAWAY, and is destroyed after as long again. */
  http2IdleTimeoutMs: number;
  /** HTTP/2 stream, reset and stall bounds; an address it is cooling down gets its connections closed at once. */
  http2Guard?: Http2Guard;
  /**
   * Trusted proxies (`TRUST_PROXY`): with `proxyProtocol`, the peers that may send a PROXY header
   * (any peer for a hop count); the HTTP/2 guard counts each session of a trusted HTTP proxy alone.
   */
  trustProxy?: TrustProxy | undefined;
  /**
   * Read a PROXY protocol v1/v2 header before HTTP or TLS when a connection starts with one, within
   * `firstByteTimeoutMs`. A trusted peer's header names the connection's client; an untrusted peer's,
   * or a malformed one, closes the connection. A connection without one is served as is (health checks).
   */
  proxyProtocol?: boolean;
  /**
   * Connections older than this (±10 % each) are moved on: HTTP/2 gets a GOAWAY (its open streams may
   * finish) and is closed `maxAgeGraceMs` later; HTTP/1.1 answers its next request with
   * `Connection: close`. 0 = never.
   */
  maxAgeMs?: number;
  maxAgeGraceMs?: number;
}

export interface OnePortServer {
  listen(port: number, host: string): Promise<number>;
  /**
   * Stops accepting, closes idle connections at once, lets in-flight requests finish, and destroys
   * whatever is still open after `graceMs`. Resolves when every connection is closed.
   */
  close(graceMs: number): Promise<void>;
  /** Open connections, whatever their protocol (for tests and diagnostics). */
  readonly connections: number;
}

/** One accepted TCP connection and what it became. */
interface Connection {
  raw: net.Socket;
  /** What the HTTP server reads: the raw socket, or the TLS socket over it. */
  wire: net.Socket | undefined;
  protocol: 'pending' | 'http1' | 'http2';
  /** HTTP/1 requests dispatched on it whose response has not closed yet. */
  inFlight: number;
  /** HTTP/1: the response of the last request dispatched (shutdown asks it to close the connection). */
  latest: http.ServerResponse | undefined;
  /** HTTP/1: a response said `Connection: close`; what the client sends after it is not executed. */
  final: boolean;
  /** When it was accepted (performance.now()), and the age at which it is moved on (MAX_CONNECTION_AGE_MS). */
  openedAt: number;
  maxAgeMs: number;
}

/**
 * One port for every protocol. Cleartext: the first bytes tell an HTTP/2 connection preface from
 * HTTP/1.x (node's http2 server cannot serve HTTP/1.1 without TLS, and node:http does not speak HTTP/2).
 * TLS: ALPN decides. The peeked bytes are pushed back before the socket is handed on.
 *
 * Because the HTTP servers never listen themselves, this is where every connection is tracked and
 * timed out: no first bytes (or TLS handshake) in time, HTTP/2 sessions idle, and at shutdown.
 */
export function createOnePortServer(options: OnePortOptions): OnePortServer {
  const { http1, http2: h2 } = options;
  const connections = new Set<Connection>();
  const byWire = new WeakMap<net.Socket, Connection>();
  /** TLS only: the raw connection of a handshake in progress, by its remote address and port. */
  const handshaking = new Map<string, Connection>();
  const sessions = new Set<http2.ServerHttp2Session>();
  let closing = false;
  /** The connection whose HTTP/2 session is being made (session.socket is a proxy, not the wire itself). */
  let handingOver: Connection | undefined;
  let drained: (() => void) | undefined;

  // node:http arms headersTimeout/requestTimeout checks and the connection list behind
  // closeIdleConnections on its own 'listening' event (setupConnectionsTracking), which a server fed
  // by `emit('connection')` never gets. Emitting it is what Node's http2 secure server with
  // allowHTTP1 does for the same reason; the connections tests fail if a Node release changes it.
  http1.emit('listening');

  const handOn = (connection: Connection, wire: net.Socket, protocol: 'http1' | 'http2') => {
    connection.wire = wire;
    connection.protocol = protocol;
    // The HTTP servers see the TLS socket: it carries the PROXY header's client too.
    const proxied = proxiedSourceOf(connection.raw);
    if (proxied !== undefined && wire !== connection.raw) (wire as net.Socket & { [PROXIED_SOURCE]?: string })[PROXIED_SOURCE] = proxied;
    byWire.set(wire, connection);
    if (protocol === 'http2') {
      // node:http2 makes the session (and emits 'session') within this call.
      handingOver = connection;
      h2.emit('connection', wire);
      handingOver = undefined;
    } else http1.emit('connection', wire);
  };

  const maxAgeMs = options.maxAgeMs ?? 0;
  const track = (raw: net.Socket): Connection => {
    const connection: Connection = {
      raw,
      wire: undefined,
      protocol: 'pending',
      inFlight: 0,
      latest: undefined,
      final: false,
      openedAt: maxAgeMs > 0 ? performance.now() : 0,
      // ±10 %, so connections opened together (a balancer's pool, clients after a restart) do not all leave at once.
      maxAgeMs: maxAgeMs > 0 ? maxAgeMs * (0.9 + Math.random() * 0.2) : 0,
    };
    connections.add(connection);
    raw.once('close', () => {
      connections.delete(connection);
      if (connections.size === 0) drained?.();
    });
    // After a hand-over the HTTP server handles socket errors; before, nothing else listens.
    raw.on('error', () => raw.destroy());
    if (closing) raw.destroy();
    return connection;
  };

  let secure: tls.Server | undefined;
  if (options.tls) {
    secure = tls.createServer({ ...options.tls, ALPNProtocols: ['h2', 'http/1.1'], handshakeTimeout: options.firstByteTimeoutMs }, (socket) => {
      const connection = handshaking.get(addressKey(socket));
      handshaking.delete(addressKey(socket));
      if (!connection || closing) {
        socket.destroy();
        return;
      }
      handOn(connection, socket, socket.alpnProtocol === 'h2' ? 'http2' : 'http1');
    });
    // A failed or timed-out handshake (handshakeTimeout). With a listener, closing is ours to do.
    secure.on('tlsClientError', (_error: Error, socket: tls.TLSSocket) => {
      handshaking.get(addressKey(socket))?.raw.destroy();
      socket.destroy();
    });
  }

  /** Cleartext: the first bytes tell HTTP/2's preface from HTTP/1.x. */
  const routeByPreface = (connection: Connection, silent: NodeJS.Timeout) => {
    const raw = connection.raw;
    const route = () => {
      const head: Buffer | null = raw.read();
      if (head === null) {
        raw.once('readable', route);
        return;
      }
      clearTimeout(silent);
      // A preface split across packets is rare; fewer bytes than the preface that match it so far count as HTTP/2.
      const compared = Math.min(head.length, PREFACE.length);
      const isHttp2 = head.subarray(0, compared).equals(PREFACE.subarray(0, compared));
      raw.unshift(head);
      handOn(connection, raw, isHttp2 ? 'http2' : 'http1');
    };
    route();
  };

  /** Once the client is known (after a PROXY header, if any): refuse it if it is cooling down, else TLS or HTTP. */
  const proceed = (connection: Connection, silent: NodeJS.Timeout) => {
    const raw = connection.raw;
    if (options.http2Guard && !viaTrustedProxy(raw) && options.http2Guard.refuses(connectionAddressOf(raw))) {
      raw.destroy();
      return;
    }
    if (!secure) {
      routeByPreface(connection, silent);
      return;
    }
    const tlsServer = secure;
    // The first bytes tell a ClientHello from plain HTTP sent to the TLS port, which gets a 400 saying so.
    const route = () => {
      const head: Buffer | null = raw.read();
      if (head === null) {
        raw.once('readable', route);
        return;
      }
      raw.unshift(head);
      // An HTTP method's first letter: never the first byte of a TLS record.
      if (head[0] !== TLS_HANDSHAKE && head[0]! >= 0x41 && head[0]! <= 0x5a) {
        clearTimeout(silent);
        raw.end(PLAIN_HTTP_ON_TLS);
        return;
      }
      // TLS has its own deadline (handshakeTimeout); bytes read past a PROXY header were pushed back and reach it.
      clearTimeout(silent);
      const key = addressKey(raw);
      handshaking.set(key, connection);
      raw.once('close', () => handshaking.delete(key));
      tlsServer.emit('connection', raw);
    };
    route();
  };

  /** Whether the connection's nearest HTTP hop is a trusted proxy (its clients are not its own). */
  const viaTrustedProxy = (socket: net.Socket | undefined): boolean =>
    options.trustProxy !== undefined &&
    socket !== undefined &&
    resolveClientAddress({ peer: socket.remoteAddress, proxied: proxiedSourceOf(socket) }, options.trustProxy).headersTrusted;

  /** Whether `peer` may send a PROXY header: in TRUST_PROXY's blocks, or anyone when it is a hop count. */
  const maySendProxyHeader = (peer: string | undefined): boolean => {
    const trust = options.trustProxy;
    if (!trust || peer === undefined) return false;
    return trust.ranges ? inRanges(peer, trust.ranges) : true;
  };

  /**
   * Reads a PROXY header if the connection starts with one (v1 at most 107 bytes, v2 16 + its
   * length); the bytes after it are pushed back. Malformed, or sent by a peer not trusted: closed.
   */
  const readProxy = (connection: Connection, silent: NodeJS.Timeout) => {
    const raw = connection.raw;
    let head: Buffer | undefined;
    const onReadable = () => {
      let chunk: Buffer | null;
      while ((chunk = raw.read()) !== null) head = head ? Buffer.concat([head, chunk]) : chunk;
      if (!head) {
        raw.once('readable', onReadable);
        return;
      }
      const found = readProxyHeader(head);
      if (found.kind === 'incomplete') {
        raw.once('readable', onReadable);
        return;
      }
      if (found.kind === 'invalid' || (found.kind === 'header' && !maySendProxyHeader(raw.remoteAddress))) {
        raw.destroy();
        return;
      }
      if (found.kind === 'header') {
        if (found.source !== undefined) (raw as net.Socket & { [PROXIED_SOURCE]?: string })[PROXIED_SOURCE] = found.source;
        head = head.subarray(found.length);
      }
      if (head.length > 0) raw.unshift(head);
      proceed(connection, silent);
    };
    onReadable();
  };

  const server = net.createServer((raw) => {
    const connection = track(raw);
    if (raw.destroyed) return;
    const silent = setTimeout(() => raw.destroy(), options.firstByteTimeoutMs);
    raw.once('close', () => clearTimeout(silent));
    if (options.proxyProtocol) readProxy(connection, silent);
    else proceed(connection, silent);
  });

  // HTTP/1: count requests in flight per connection, so shutdown closes exactly the idle ones, and
  // never execute a request that will not be answered. node:http keeps reading a connection after a
  // response that closes it (its FIN is only a half-close) and emits whatever request comes next; so
  // once shutdown began, or once a response said `Connection: close`, a request read from a
  // connection is not dispatched at all: the client sees the connection end without an answer, which
  // balancers (HAProxy's retry-on empty-response) and HTTP clients may retry safely, as it never ran.
  http1.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const connection = byWire.get(req.socket);
    if (!connection) return options.serveHttp1(req, res);
    if (closing || connection.final) {
      // Nothing of this connection is in flight any more (a request that raced the shutdown): end it now.
      if (connection.inFlight === 0) connection.wire?.destroy();
      return;
    }
    if (connection.maxAgeMs > 0 && performance.now() - connection.openedAt > connection.maxAgeMs) {
      res.setHeader('connection', 'close');
      connection.final = true;
    }
    connection.inFlight++;
    connection.latest = res;
    // A response closes once: `on`, without once's wrapper per request.
    res.on('close', () => {
      connection.inFlight--;
      // A response that began before shutdown still said keep-alive: end the connection ourselves
      // (a half-close: the client may still read the answer; what it sends next is not executed).
      if (closing && connection.inFlight === 0) connection.wire?.end();
    });
    options.serveHttp1(req, res);
  });

  // HTTP/2: a session idle for the timeout is asked to go away (its open streams may finish); if it
  // stays idle for as long again, it is destroyed. Any frame restarts the timer (Node's own).
  h2.on('session', (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    const socket = session.socket as net.Socket | undefined;
    options.http2Guard?.watch(session, connectionAddressOf(socket), !viaTrustedProxy(socket));
    const onIdle = () => {
      if (session.closed) {
        session.destroy();
        return;
      }
      session.close();
      session.setTimeout(options.http2IdleTimeoutMs, onIdle);
    };
    session.setTimeout(options.http2IdleTimeoutMs, onIdle);
    let aged: NodeJS.Timeout | undefined;
    const connection = handingOver;
    if (connection && connection.maxAgeMs > 0) {
      // gRPC A9 (MAX_CONNECTION_AGE): clients behind an L4 balancer reconnect, and may reach new replicas.
      aged = setTimeout(() => {
        goAway(session);
        aged = setTimeout(() => session.destroy(), options.maxAgeGraceMs ?? 0);
        aged.unref();
      }, connection.maxAgeMs);
      aged.unref();
    }
    session.once('close', () => {
      clearTimeout(aged);
      sessions.delete(session);
    });
  });

  return {
    get connections() {
      return connections.size;
    },
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address();
          resolve(typeof address === 'object' && address ? address.port : port);
        });
      });
    },
    async close(graceMs) {
      closing = true;
      options.http2Guard?.stop();
      const allClosed = new Promise<void>((resolve) => {
        drained = resolve;
        if (connections.size === 0) resolve();
      });
      if (server.listening) server.close();
      // Clears node:http's timeout checker; neither server listens, so nothing else happens. (The
      // HTTP/2 server is closed once every session is: a Node release that closes sessions there
      // would cut the graceful GOAWAY short.)
      http1.close();
      for (const connection of connections) {
        // Nothing was dispatched on these: no first bytes or handshake yet, or an HTTP/1 connection
        // between requests or still sending headers. Closing them loses no accepted work.
        if (connection.protocol === 'pending' || (connection.protocol === 'http1' && connection.inFlight === 0)) {
          connection.raw.destroy();
          connection.wire?.destroy();
        } else if (connection.protocol === 'http1' && connection.latest && !connection.latest.headersSent) {
          // Its answer is the connection's last: node:http closes the connection after it.
          connection.latest.setHeader('connection', 'close');
        }
      }
      for (const session of sessions) goAway(session);
      const grace = setTimeout(() => {
        for (const session of sessions) session.destroy();
        for (const connection of connections) {
          connection.wire?.destroy();
          connection.raw.destroy();
        }
      }, graceMs);
      await allClosed;
      clearTimeout(grace);
      h2.close();
    },
  };
}

/**
 * GOAWAY naming the last stream served; the session closes once its open streams end (Node's
 * `close()`). Not gRPC A9's two steps (a GOAWAY with the highest stream id and a PING, then the
 * final one): Node's nghttp2 ignores every new stream once any GOAWAY is sent (it has no
 * `nghttp2_submit_shutdown_notice`), so the first step would only make the client learn an RTT
 * later which of its racing streams were not served. Those never ran; gRPC clients retry them
 * transparently (docs/operations.md, Shutdown).
 */
function goAway(session: http2.ServerHttp2Session): void {
  if (!session.closed && !session.destroyed) session.close();
}

function addressKey(socket: net.Socket): string {
  return `${socket.remoteAddress}:${socket.remotePort}`;
}
