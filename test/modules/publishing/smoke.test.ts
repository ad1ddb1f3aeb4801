import http2 from 'node:http2';
import { startServer, type TestServer } from '../../support/app.js';
import { createActors, graphql, SUPERUSER, type Actors } from './support.js';

let server: TestServer;
let actors: Actors;
beforeAll(async () => {
  server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
  actors = await createActors(server);
});
afterAll(() => server?.close());

test('a writer writes, an editor publishes, anyone reads it', async () => {
  const topic = await server.request('POST', '/v1/topics', { token: actors.tokens.superuser, body: { title: 'Engineering' } });
  expect(topic.status).toBe(201);
  const created = await server.request('POST', '/v1/articles', {
    token: actors.tokens.writer,
    body: { title: 'Hello', text: 'Running quickly', tags: ['a'], topic: topic.body._id },
  });
  expect(created.status).toBe(201);
  const published = await server.request('POST', `/v1/articles/${created.body._id}/publish`, { token: actors.tokens.editor });
  expect(published.body.status).toBe('published');
  const list = await server.request('GET', '/v1/articles?q=run');
  expect(list.body.items).toHaveLength(1);
  expect(list.headers.get('deprecation')).toBe('true');
  const gql = await graphql(server, actors.tokens.reader, '{ articles { total items { title author { name } topic { title } } } me { role } }');
  expect(gql.body).toEqual({
    data: { articles: { total: 1, items: [{ title: 'Hello', author: { name: 'writer' }, topic: { title: 'Engineering' } }] }, me: { role: 'reader' } },
  });
});

test('/v1 and /graphql answer over HTTP/2 (cleartext, prior knowledge) as well', async () => {
  const session = http2.connect(server.url);
  const ask = (headers: http2.OutgoingHttpHeaders, body?: string) =>
    new Promise<{ status: number; deprecation: unknown; text: string }>((resolve, reject) => {
      const stream = session.request(headers);
      let text = '';
      let status = 0;
      let deprecation: unknown;
      stream.on('response', (response) => {
        status = Number(response[':status']);
        deprecation = response.deprecation;
      });
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => (text += chunk));
      stream.on('end', () => resolve({ status, deprecation, text }));
      stream.on('error', reject);
      stream.end(body);
    });
  try {
    const rest = await ask({ ':method': 'GET', ':path': '/v1/topics' });
    expect(rest).toMatchObject({ status: 200, deprecation: 'true' });
    const gql = await ask(
      { ':method': 'POST', ':path': '/graphql', 'content-type': 'application/json', authorization: `Bearer ${actors.tokens.reader}` },
      JSON.stringify({ query: '{ me { role } }' }),
    );
    expect(gql.status).toBe(200);
    expect(JSON.parse(gql.text)).toEqual({ data: { me: { role: 'reader' } } });
  } finally {
    session.close();
  }
});
