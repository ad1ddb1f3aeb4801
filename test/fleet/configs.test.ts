import { renderHaproxy, renderNginx } from './configs.js';

const haproxy = {
  httpPort: 18080,
  grpcPort: 18081,
  slots: [
    { name: 'r1a', port: 19001 },
    { name: 'r1b', port: 19002 },
  ],
  check: { interMs: 500, fall: 2, rise: 2 },
  statsSocket: '/tmp/fleet/haproxy.sock',
};

describe('the fleet test renders the repository configurations', () => {
  it('gives HAProxy the test ports, one server line per slot in each backend, its check timings and an admin socket', () => {
    const rendered = renderHaproxy(haproxy);
    expect(rendered).toContain('stats socket /tmp/fleet/haproxy.sock level admin');
    expect(rendered).toMatch(/frontend cfs_http\n(?:.*\n)*?\s+bind 127\.0\.0\.1:18080\n/);
    expect(rendered).toMatch(/frontend cfs_grpc\n(?:.*\n)*?\s+bind 127\.0\.0\.1:18081\n/);
    expect(rendered.match(/^\s*server r1a 127\.0\.0\.1:19001$/gm)).toHaveLength(2);
    expect(rendered.match(/^\s*server r1b 127\.0\.0\.1:19002$/gm)).toHaveLength(2);
    expect(rendered).not.toMatch(/10\.0\.0\.\d+/);
    expect(rendered).toMatch(/default-server check inter 500ms fall 2 rise 2\n/);
    expect(rendered).toMatch(/default-server check send-proxy-v2 inter 500ms fall 2 rise 2\n/);
  });

  it.each([
    ['option forwardfor', /^\s*option forwardfor\n/m],
    ['the readiness check', /^\s*option httpchk GET \/readyz\n/gm],
    ['the retries', /^\s*retry-on conn-failure empty-response\n/m],
    ['the PROXY header to the gRPC replicas', / send-proxy-v2/g],
  ])('refuses an HAProxy configuration without %s', (_name, line) => {
    const source = renderHaproxy(haproxy).replace(line, '');
    expect(() => renderHaproxy(haproxy, source)).toThrow(/lost a line the fleet test relies on/);
  });

  it('gives nginx the test ports and replicas, and paths of its own for its pid, log and temporary files', () => {
    const rendered = renderNginx({ httpPort: 18082, grpcPort: 18083, replicaPorts: [19001, 19003], dir: '/tmp/fleet' });
    expect(rendered).toContain('listen 127.0.0.1:18082;');
    expect(rendered).toContain('listen 127.0.0.1:18083 http2;');
    expect(rendered.match(/server 127\.0\.0\.1:19001 max_fails=1 fail_timeout=2s;/g)).toHaveLength(2);
    expect(rendered.match(/server 127\.0\.0\.1:19003 max_fails=1 fail_timeout=2s;/g)).toHaveLength(2);
    expect(rendered).toContain('pid /tmp/fleet/nginx.pid;');
    expect(rendered).toContain('proxy_temp_path /tmp/fleet/nginx-proxy;');
    expect(rendered).not.toMatch(/10\.0\.0\.\d+/);
  });
});
