import type { Config } from '../config.js';
import type { NodeRequest } from './rest-api.js';

const HOST = /^[A-Za-z0-9.\-:[\]]+$/;

/**
 * The origin a client reached this server on (`http://localhost:8080`): the scheme is https when
 * the server terminates TLS or a proxy says so (`X-Forwarded-Proto`), the host is the request's
 * `Host` (HTTP/1.1) or `:authority` (HTTP/2); a host that is not a plain host[:port] falls back to
 * `localhost:<PORT>`. Documents that name this server (OAuth metadata) are filled from it, so they
 * point at whatever address the client used.
 */
export function servingOriginOf(config: Pick<Config, 'tlsCert' | 'port'>, headers: NodeRequest['headers']): string {
  const forwarded = String(headers['x-forwarded-proto'] ?? '')
    .split(',')[0]
    ?.trim();
  const scheme = forwarded === 'https' || forwarded === 'http' ? forwarded : config.tlsCert ? 'https' : 'http';
  const host = String(headers.host ?? headers[':authority'] ?? '');
  return `${scheme}://${HOST.test(host) ? host : `localhost:${config.port}`}`;
}
