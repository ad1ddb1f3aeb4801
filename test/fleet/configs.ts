/**
 * The fleet test's configuration files: the repository's own HAProxy and nginx configurations
 * (deploy/), rendered with the test's ports, replicas and timings, so the files operators copy are
 * the files the test runs.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;
export const HAPROXY_CONFIG = join(ROOT, 'deploy/haproxy/haproxy.cfg');
export const NGINX_CONFIG = join(ROOT, 'deploy/nginx/nginx.conf');

/** One place a replica may listen; a rolling restart starts the new process on the other slot of its pair. */
export interface Slot {
  name: string;
  port: number;
}

export interface HaproxySettings {
  httpPort: number;
  grpcPort: number;
  slots: Slot[];
  /** Health check period and the checks to fail / pass before a replica is taken out / put back. */
  check: { interMs: number; fall: number; rise: number };
  statsSocket: string;
}

/** Lines the fleet test relies on: a configuration without them would pass for the wrong reason. */
const HAPROXY_REQUIRED = [
  /^\s*option forwardfor\b/m,
  /^\s*option httpchk GET \/readyz\b/m,
  /^\s*retry-on conn-failure empty-response\b/m,
  /^\s*mode tcp\b/m,
  /^\s*(default-)?server\s.*\ssend-proxy-v2\b/m,
];

/**
 * deploy/haproxy/haproxy.cfg with the test's own `bind` addresses, `server` lines (one per slot, in
 * each backend) and check timings, plus an admin socket to read the servers' states from.
 */
export function renderHaproxy(settings: HaproxySettings, source = readFileSync(HAPROXY_CONFIG, 'utf8')): string {
  for (const pattern of HAPROXY_REQUIRED) {
    if (!pattern.test(source)) throw new Error(`${HAPROXY_CONFIG} lost a line the fleet test relies on (${pattern.source})`);
  }
  const out: string[] = [];
  let section = '';
  let serversWritten = false;
  for (const line of source.split('\n')) {
    const header = /^(global|defaults|frontend|backend)\b\s*(\S*)/.exec(line);
    if (header) {
      section = `${header[1]} ${header[2]}`.trim();
      serversWritten = false;
      out.push(line);
      if (section === 'global') out.push(`    stats socket ${settings.statsSocket} level admin`);
      continue;
    }
    const bind = /^(\s*)bind\s/.exec(line);
    if (bind) {
      out.push(`${bind[1]}bind 127.0.0.1:${section.includes('grpc') ? settings.grpcPort : settings.httpPort}`);
      continue;
    }
    const defaultServer = /^(\s*)default-server\s(.*)$/.exec(line);
    if (defaultServer) {
      const { interMs, fall, rise } = settings.check;
      const rest = (defaultServer[2] ?? '').replace(/\s*\b(inter|fall|rise)\s+\S+/g, '');
      out.push(`${defaultServer[1]}default-server ${rest.trim()} inter ${interMs}ms fall ${fall} rise ${rise}`);
      continue;
    }
    const server = /^(\s*)server\s/.exec(line);
    if (server) {
      if (!serversWritten) for (const slot of settings.slots) out.push(`${server[1]}server ${slot.name} 127.0.0.1:${slot.port}`);
      serversWritten = true;
      continue;
    }
    out.push(line);
  }
  return out.join('\n');
}

export interface NginxSettings {
  httpPort: number;
  grpcPort: number;
  replicaPorts: number[];
  /** A directory for the pid file, the error log and nginx's temporary files. */
  dir: string;
}

const NGINX_REQUIRED = [/proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;/, /proxy_next_upstream\s/, /grpc_pass grpc:\/\//];

/** deploy/nginx/nginx.conf with the test's listen ports, replicas, and paths under `dir`. */
export function renderNginx(settings: NginxSettings, source = readFileSync(NGINX_CONFIG, 'utf8')): string {
  for (const pattern of NGINX_REQUIRED) {
    if (!pattern.test(source)) throw new Error(`${NGINX_CONFIG} lost a line the fleet test relies on (${pattern.source})`);
  }
  const out: string[] = [];
  let serversWritten = false;
  for (const line of source.split('\n')) {
    if (/^\s*pid\s/.test(line)) {
      out.push(`pid ${join(settings.dir, 'nginx.pid')};`);
      continue;
    }
    if (/^\s*error_log\s/.test(line)) {
      out.push(`error_log ${join(settings.dir, 'nginx-error.log')} warn;`);
      continue;
    }
    if (/^\s*http\s*\{/.test(line)) {
      out.push(line);
      for (const kind of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) out.push(`    ${kind}_temp_path ${join(settings.dir, `nginx-${kind}`)};`);
      continue;
    }
    if (/^\s*upstream\s/.test(line)) serversWritten = false;
    const server = /^(\s*)server\s+\S+:\d+(.*)$/.exec(line);
    if (server) {
      if (!serversWritten) for (const port of settings.replicaPorts) out.push(`${server[1]}server 127.0.0.1:${port}${server[2]}`);
      serversWritten = true;
      continue;
    }
    const listen = /^(\s*)listen\s+\d+(.*)$/.exec(line);
    if (listen) {
      const port = (listen[2] ?? '').includes('http2') ? settings.grpcPort : settings.httpPort;
      out.push(`${listen[1]}listen 127.0.0.1:${port}${listen[2]}`);
      continue;
    }
    out.push(line);
  }
  return out.join('\n');
}
