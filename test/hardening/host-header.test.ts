import net from 'node:net';
import { once } from 'node:events';
import { startServer, type TestServer } from '../support/app.js';

let server: TestServer | undefined;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.close());

/** Sends raw HTTP/1.1 bytes and answers everything the server wrote before it closed. */
async function exchange(request: string): Promise<string> {
  const socket = net.connect(server!.port, '127.0.0.1');
  socket.on('error', () => undefined);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.write(request);
  await once(socket, 'close');
  return received;
}

test('a request with two Host headers is answered 400 and the connection is closed (RFC 9112 §3.2)', async () => {
  const answer = await exchange('GET /healthz HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n');
  expect(answer).toMatch(/^HTTP\/1\.1 400 /);
  expect(answer).toMatch(/\r\nconnection: close\r\n/i);
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { statusCode: number; message: string };
  expect(body.statusCode).toBe(400);
  expect(body.message).toMatch(/Host/);
});

test('a request with one Host header is served', async () => {
  const answer = await exchange('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  expect(answer).toMatch(/^HTTP\/1\.1 200 /);
});
