import http2 from 'node:http2';
import { startPeerServer, startServer, type PeerServer, type TestServer } from '../../support/app.js';
import { createRoute, openEventStream, rawRequest } from './support.js';

let serverA: TestServer;
let serverB: PeerServer | undefined;
let urlB: string;

/**
 * Server B shares server A's database: on PostgreSQL through its own pool and LISTEN connection
 * (two processes in all but name), on PGlite through the same embedded instance (PGlite cannot be
 * shared between processes; its NOTIFY is delivered in-process).
 */
beforeAll(async () => {
  serverA = await startServer();
  serverB = await startPeerServer(serverA);
  urlB = serverB.url;
});
afterAll(async () => {
  await serverB?.close();
  await serverA?.close();
});

test('a capture on server A arrives on the event stream of server B', async () => {
  const { routeId } = await createRoute(serverA);
  const stream = await openEventStream(`${urlB}/inspect/${routeId}/stream`);
  try {
    expect(stream.status).toBe(200);
    const answer = await rawRequest(`${serverA.url}/${routeId}/from-a`, 'POST', [['Content-Type', 'text/plain']], 'hello from A');
    expect(answer.status).toBe(200);
    const event = JSON.parse((await stream.next()).data);
    expect(event).toMatchObject({ routeId, path: `/${routeId}/from-a`, body: 'hello from A', id: JSON.parse(answer.body.toString()).requestId });
  } finally {
    stream.close();
  }
});

test('a route deleted on server A stops capturing on server B, which had it cached', async () => {
  const { routeId } = await createRoute(serverA);
  expect((await rawRequest(`${urlB}/${routeId}`, 'POST', [], 'cached on B')).status).toBe(200);
  expect((await serverA.request('DELETE', `/inspect/${routeId}`)).status).toBe(204);
  expect((await rawRequest(`${urlB}/${routeId}`, 'POST', [], 'after delete')).status).toBe(404);
});

test('a capture over HTTP/2 records version 2.0 and the raw header lines, pseudo-headers included', async () => {
  const { routeId } = await createRoute(serverA);
  const session = http2.connect(serverA.url);
  try {
    const status = await new Promise<number>((resolve, reject) => {
      const request = session.request({ ':method': 'PATCH', ':path': `/${routeId}/h2?x=1`, 'content-type': 'application/json', 'x-dup': ['a', 'b'] });
      let answered = 0;
      request.on('response', (headers) => (answered = Number(headers[':status'])));
      request.resume();
      request.on('end', () => resolve(answered));
      request.on('error', reject);
      request.end('{"h2":true}');
    });
    expect(status).toBe(200);
  } finally {
    session.close();
  }
  const listed = await serverA.request('GET', `/inspect/${routeId}`, { headers: { accept: 'application/json' } });
  const [captured] = listed.body.items;
  expect(captured).toMatchObject({ method: 'PATCH', httpVersion: '2.0', path: `/${routeId}/h2`, query: 'x=1', json: { h2: true } });
  const names = captured.headers.map(([name]: [string]) => name);
  expect(names).toEqual(expect.arrayContaining([':method', ':path', 'content-type']));
  expect(captured.headers.filter(([name]: [string]) => name === 'x-dup').map(([, value]: [string, string]) => value)).toEqual(['a', 'b']);
});
