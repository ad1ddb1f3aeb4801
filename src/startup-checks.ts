import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import type { Config } from './config.js';
import { StartupSettingError } from './startup-errors.js';

/**
 * Checks made before the store opens, so a setting that cannot work fails in well under a second and
 * leaves nothing behind (no DATA_DIR created, no database migrated) instead of after the store's start.
 */

/** What a file system code means to an operator. */
const FILE_PROBLEMS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'a directory, not a file',
};

/**
 * TLS_CERT and TLS_KEY are read and parsed as the server will, each error naming its variable: an
 * unreadable file, a file that is not PEM, and a key that does not belong to the certificate.
 */
export function checkTlsFiles(config: Pick<Config, 'tlsCert' | 'tlsKey'>): void {
  if (!config.tlsCert || !config.tlsKey) return;
  const read = (name: string, path: string): string => {
    try {
      return readFileSync(path, 'utf8');
    } catch (error) {
      const code = (error as { code?: string }).code ?? '';
      throw new StartupSettingError(`${name} ${path} cannot be read: ${FILE_PROBLEMS[code] ?? (error as Error).message}${code ? ` (${code})` : ''}`);
    }
  };
  const cert = read('TLS_CERT', config.tlsCert);
  const key = read('TLS_KEY', config.tlsKey);
  const parse = (name: string, path: string, what: string, options: tls.SecureContextOptions) => {
    try {
      tls.createSecureContext(options);
    } catch (error) {
      throw new StartupSettingError(`${name} ${path} is not ${what}: ${(error as Error).message}`);
    }
  };
  parse('TLS_CERT', config.tlsCert, 'a PEM certificate', { cert });
  parse('TLS_KEY', config.tlsKey, 'a PEM private key', { key });
  try {
    tls.createSecureContext({ cert, key });
  } catch (error) {
    throw new StartupSettingError(`TLS_KEY ${config.tlsKey} is not the key of TLS_CERT ${config.tlsCert}: ${(error as Error).message}`);
  }
}

/**
 * Binds PORT on HOST and lets it go at once: a port already in use (or not ours to bind) is reported
 * now, as the server's own listen would report it. PORT 0 (any free port) needs no check.
 */
export function checkPortFree(port: number, host: string): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    // exclusive: a cluster worker would otherwise share the primary's handle and never see EADDRINUSE.
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}
