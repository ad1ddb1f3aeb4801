import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { get as httpsGet } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type TestServer } from '../support/app.js';

/** Plain HTTP sent to the TLS port (issue 29 item 10): a 400 saying so, where it was an empty reply. */
let server: TestServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tls-plain-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=localhost'].concat([
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ]),
    { stdio: 'ignore' },
  );
  server = await startServer({ TLS_CERT: join(dir, 'cert.pem'), TLS_KEY: join(dir, 'key.pem') });
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('plain HTTP to the TLS port is answered 400 with a text saying to use https://, then closed', async () => {
  const answer = await new Promise<{ status?: number; type?: string; connection?: string; body: string }>((resolve, reject) => {
    request({ host: '127.0.0.1', port: server.port, path: '/api', agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode, type: response.headers['content-type'], connection: response.headers.connection, body }));
    })
      .on('error', reject)
      .end();
  });
  expect(answer).toEqual({
    status: 400,
    type: 'text/plain; charset=utf-8',
    connection: 'close',
    body: expect.stringMatching(/plain HTTP request was sent to the HTTPS port\. Use https:\/\/ instead of http:\/\//) as unknown as string,
  });
});

test('HTTPS on the same port is still served', async () => {
  const status = await new Promise<number | undefined>((resolve, reject) => {
    // The test's self-signed certificate: what matters here is the handshake and the answer.
    httpsGet({ host: '127.0.0.1', port: server.port, path: '/healthz', rejectUnauthorized: false, agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode);
    }).on('error', reject);
  });
  expect(status).toBe(200);
});
