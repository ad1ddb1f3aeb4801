import type { Config } from '../config.js';
import type { ResolvedClient } from '../services/client-address.js';
import type { NodeRequest } from './reply.js';

const HOST = /^[A-Za-z0-9.\-:[\]]+$/;

/**
 * The origin a client reached this server on (`http://localhost:8080`): the scheme is https when
 * the server terminates TLS, the host is the request's `Host` (HTTP/1.1) or `:authority` (HTTP/2).
 * When the proxy that sent the request is trusted (`TRUST_PROXY`, `client.headersTrusted`), its
 * word wins: `Forwarded`'s `proto`/`host` in the element that named the client, else the last
 * `X-Forwarded-Proto`/`X-Forwarded-Host` value (the one the nearest proxy wrote). From anyone else
 * those headers are ignored, so a client cannot make this server name another origin. A host that
 * is not a plain host[:port] falls back to `localhost:<PORT>`. Documents that name this server (OAuth
 * metadata, webhook URLs) are filled from it, so they point at whatever address the client used.
 * An origin the operator configured (`configured`: WEBHOOK_PUBLIC_URL for webhook URLs) wins over
 * all of that: it is the one place that decides which origin a document names.
 */
export function servingOriginOf(
  config: Pick<Config, 'tlsCert' | 'port'>,
  headers: NodeRequest['headers'],
  client?: ResolvedClient,
  configured?: string,
): string {
  if (configured !== undefined) return configured;
  let scheme = config.tlsCert ? 'https' : 'http';
  let host = String(headers.host ?? headers[':authority'] ?? '');
  if (client?.headersTrusted) {
    const proto = (client.element?.proto ?? lastValue(headers['x-forwarded-proto']))?.toLowerCase();
    if (proto === 'https' || proto === 'http') scheme = proto;
    const forwardedHost = client.element?.host ?? lastValue(headers['x-forwarded-host']);
    if (forwardedHost !== undefined && HOST.test(forwardedHost)) host = forwardedHost;
  }
  return `${scheme}://${HOST.test(host) ? host : `localhost:${config.port}`}`;
}

/** The last of a header's comma-separated values, over all its lines. */
function lastValue(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value[value.length - 1] : value;
  if (text === undefined) return undefined;
  const last = text.slice(text.lastIndexOf(',') + 1).trim();
  return last === '' ? undefined : last;
}
