import http from 'node:http';
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
import type { Config } from '../config.js';
import { ContextResponse, type NodeRequest, type NodeResponse } from '../http/reply.js';
import { Http2Guard } from './http2-guard.js';
import { createOnePortServer, type OnePortServer } from './protocol-switch.js';

/**
 * The listeners of the one port, with their timeouts and TLS: an HTTP/1.1 server and an HTTP/2 server
 * (bounded concurrent streams, its rates and stalls watched by the guard) behind the protocol switch.
 * `onHttp2` receives the HTTP/2 server to take its streams (src/server/h2-streams.ts).
 */
export function createListeners(
  config: Config,
  dispatch: (req: NodeRequest, res: NodeResponse) => void,
  onHttp2: (h2: http2.Http2Server) => void,
): OnePortServer {
  // Its requests reach `dispatch` through the protocol switch, which refuses those it would not answer.
  const http1 = http.createServer({
    // Its responses hold the request id and traceparent until the head is written (src/http/reply.ts).
    ServerResponse: ContextResponse,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    headersTimeout: config.headersTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    // Node checks both timeouts on this interval (30 s by default, which would let a slow-header
    // client hold its socket that much longer than HEADERS_TIMEOUT_MS).
    connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(config.headersTimeoutMs / 4))),
  });
  // A bounded SETTINGS_MAX_CONCURRENT_STREAMS (Node's default is 2^32-1); rates and stalls are the guard's.
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: config.http2MaxConcurrentStreams } });
  onHttp2(h2);
  const http2Guard = new Http2Guard({
    maxStreamsPerSecond: config.http2MaxStreamsPerSecond,
    maxResetsPerSecond: config.http2MaxResetsPerSecond,
    maxStreamsPerAddress: config.http2MaxStreamsPerAddress,
    stallTimeoutMs: config.http2StallTimeoutMs,
    cooldownMs: config.http2AbuseCooldownMs,
  });
  const tls = config.tlsCert && config.tlsKey ? { cert: readFileSync(config.tlsCert, 'utf8'), key: readFileSync(config.tlsKey, 'utf8') } : undefined;
  return createOnePortServer({
    http1,
    serveHttp1: dispatch,
    http2: h2,
    tls,
    firstByteTimeoutMs: config.firstByteTimeoutMs,
    http2IdleTimeoutMs: config.http2IdleTimeoutMs,
    http2Guard,
    trustProxy: config.trustProxy,
    proxyProtocol: config.proxyProtocol,
    maxAgeMs: config.maxConnectionAgeMs,
    maxAgeGraceMs: config.maxConnectionAgeGraceMs,
  });
}
