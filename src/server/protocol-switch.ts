import net from 'node:net';
import tls from 'node:tls';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

export interface ProtocolTargets {
  /** Receives HTTP/2 connections (cleartext prior knowledge, or TLS with ALPN h2). */
  http2(socket: net.Socket): void;
  /** Receives everything else as HTTP/1.x. */
  http1(socket: net.Socket): void;
}

/**
 * One port for every protocol. Cleartext: the first bytes tell an HTTP/2 connection preface from
 * HTTP/1.x (node's http2 server cannot serve HTTP/1.1 without TLS, and express crashes on HTTP/2
 * requests). TLS: ALPN decides. The peeked bytes are pushed back before the socket is handed on.
 */
export function createProtocolSwitch(targets: ProtocolTargets, tlsOptions?: { cert: string; key: string }): net.Server {
  if (tlsOptions) {
    return tls.createServer({ ...tlsOptions, ALPNProtocols: ['h2', 'http/1.1'] }, (socket) => {
      if (socket.alpnProtocol === 'h2') targets.http2(socket);
      else targets.http1(socket);
    });
  }
  return net.createServer((socket) => {
    socket.once('readable', function route() {
      const head: Buffer | null = socket.read();
      if (head === null) {
        socket.once('readable', route);
        return;
      }
      // A preface split across packets is rare; fewer bytes than the preface that match it so far count as HTTP/2.
      const compared = Math.min(head.length, PREFACE.length);
      const isHttp2 = head.subarray(0, compared).equals(PREFACE.subarray(0, compared));
      socket.unshift(head);
      if (isHttp2) targets.http2(socket);
      else targets.http1(socket);
    });
    socket.on('error', () => socket.destroy());
  });
}
