/**
 * The baseline of `npm run bench:webhooks`: bare node:http reading each request body and answering
 * the same acknowledgement as the capture endpoint, storing nothing. The Node ceiling for this load.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    Buffer.concat(chunks);
    const body = JSON.stringify({ ok: true, requestId: randomUUID() });
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
  });
});
server.keepAliveTimeout = 5000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
