import type { Socket } from 'node:net';
import { resolveClientAddress, type ResolvedClient, type TrustProxy } from '../services/client-address.js';

/** Set by the listener on a connection whose trusted peer sent a PROXY protocol header naming a client. */
export const PROXIED_SOURCE = Symbol('PROXY protocol source');

/** Set on a request by `resolveRequestClient` when proxies are trusted. */
const RESOLVED = Symbol('resolved client');

interface AddressedSocket {
  remoteAddress?: string | undefined;
  [PROXIED_SOURCE]?: string;
}

interface AddressedRequest {
  headers: Record<string, string | string[] | undefined>;
  // HTTP/2's compatibility request hands out a proxy of the session's socket: symbol keys reach the socket.
  socket?: Socket | AddressedSocket | null;
  [RESOLVED]?: ResolvedClient;
}

/** The address a connection comes from: the source its PROXY header named, else its TCP peer. */
export function connectionAddressOf(socket: Socket | AddressedSocket | null | undefined): string | undefined {
  if (!socket) return undefined;
  return (socket as AddressedSocket)[PROXIED_SOURCE] ?? socket.remoteAddress;
}

/** The source a PROXY header named for a connection, if one did. */
export function proxiedSourceOf(socket: Socket | AddressedSocket | null | undefined): string | undefined {
  return socket ? (socket as AddressedSocket)[PROXIED_SOURCE] : undefined;
}

/**
 * Resolves a request's client once, from its connection and forwarding headers, and keeps it on the
 * request for `clientOf`. Without trusted proxies nothing is done: `clientOf` reads the connection.
 */
export function resolveRequestClient(req: AddressedRequest, trust: TrustProxy | undefined): void {
  if (!trust) return;
  const socket = req.socket as AddressedSocket | null | undefined;
  req[RESOLVED] = resolveClientAddress(
    {
      peer: socket?.remoteAddress,
      proxied: socket?.[PROXIED_SOURCE],
      xForwardedFor: req.headers['x-forwarded-for'],
      forwarded: req.headers.forwarded,
    },
    trust,
  );
}

/** The request's client: as resolved through trusted proxies, else the connection's address. */
export function clientOf(req: AddressedRequest): ResolvedClient {
  return req[RESOLVED] ?? { address: connectionAddressOf(req.socket), proxies: [], headersTrusted: false };
}

/** The request's client address (empty when unknown). */
export function clientAddressOf(req: AddressedRequest): string {
  return req[RESOLVED]?.address ?? connectionAddressOf(req.socket) ?? '';
}
