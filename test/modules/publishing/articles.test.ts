import { startServer, type TestServer } from '../../support/app.js';
import { createActors, SUPERUSER, type Actors } from './support.js';

let server: TestServer;
let actors: Actors;
let topics: { engineering: string; cooking: string };

beforeAll(async () => {
  server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
  actors = await createActors(server);
  const engineering = await server.request('POST', '/v1/topics', { token: actors.tokens.superuser, body: { title: 'Engineering' } });
  const cooking = await server.request('POST', '/v1/topics', { token: actors.tokens.superuser, body: { title: 'Cooking' } });
  topics = { engineering: engineering.body._id, cooking: cooking.body._id };
});
afterAll(() => server?.close());

async function write(token: string, body: Record<string, unknown>) {
  const created = await server.request('POST', '/v1/articles', { token, body: { text: 'Some text', ...body } });
  expect(created.status).toBe(201);
  return created.body;
}

async function publish(id: string) {
  const published = await server.request('POST', `/v1/articles/${id}/publish`, { token: actors.tokens.editor });
  expect(published.status).toBe(200);
  return published.body;
}

describe('writing', () => {
  test('a new article is a draft authored by the caller, with no publishedAt', async () => {
    const article = await write(actors.tokens.writer, {
      title: 'Mine',
      tags: ['x'],
      files: [{ url: 'https://cdn.example.com/a.png', fileType: 'image/png' }],
      topic: topics.engineering,
    });
    expect(article).toMatchObject({ status: 'draft', author: actors.ids.writer, topic: topics.engineering, tags: ['x'], publishedAt: null });
    expect(article._id).toMatch(/^[0-9a-f]{24}$/);
    expect(new Date(article.createdAt).toISOString()).toBe(article.createdAt);
  });

  test('PUT replaces title, text, tags, files and topic; what is left out is cleared', async () => {
    const article = await write(actors.tokens.writer, {
      title: 'Before',
      tags: ['a', 'b'],
      files: [{ url: 'https://x.example/f', fileType: 'text/plain' }],
      topic: topics.engineering,
    });
    const updated = await server.request('PUT', `/v1/articles/${article._id}`, { token: actors.tokens.writer, body: { title: 'After', text: 'New text' } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ title: 'After', text: 'New text', tags: [], files: [], topic: null, author: actors.ids.writer, status: 'draft' });
    expect(Date.parse(updated.body.modifiedAt)).toBeGreaterThanOrEqual(Date.parse(article.modifiedAt));
  });

  test('an editor changing an article leaves its author as it was', async () => {
    const article = await write(actors.tokens.writer, { title: 'Theirs' });
    const updated = await server.request('PUT', `/v1/articles/${article._id}`, {
      token: actors.tokens.editor,
      body: { title: 'Edited', text: 'By the editor' },
    });
    expect(updated.body.author).toBe(actors.ids.writer);
  });

  test.each([
    ['a blank title', { title: '   ', text: 'x' }, 'title'],
    ['a missing text', { title: 'x' }, 'text'],
    ['an unknown property', { title: 'x', text: 'y', author: 'someone' }, 'author'],
    ['a tag that is not a string', { title: 'x', text: 'y', tags: [1] }, 'tags.0'],
    ['a file without a type', { title: 'x', text: 'y', files: [{ url: 'https://x.example/' }] }, 'files.0.fileType'],
    ['a malformed topic id', { title: 'x', text: 'y', topic: 'nope' }, 'topic'],
    ['an unknown topic', { title: 'x', text: 'y', topic: 'ffffffffffffffffffffffff' }, 'topic'],
    ['too many tags', { title: 'x', text: 'y', tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
  ])('%s is a 400 problem naming the field', async (_name, body, field) => {
    const response = await server.request('POST', '/v1/articles', { token: actors.tokens.writer, body });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.body).toMatchObject({ type: 'about:blank', title: 'Bad Request', status: 400 });
    expect(response.body.errors.map((error: { field: string }) => error.field)).toContain(field);
  });
});

describe('publishing', () => {
  test('publishing a draft makes it published with publishedAt', async () => {
    const article = await write(actors.tokens.writer, { title: 'To publish' });
    const published = await publish(article._id);
    expect(published.status).toBe('published');
    expect(Date.parse(published.publishedAt)).toBeGreaterThanOrEqual(Date.parse(article.createdAt));
  });

  test('publishing a published article is a no-op 200 that keeps publishedAt', async () => {
    const first = await publish((await write(actors.tokens.writer, { title: 'Twice' }))._id);
    const second = await publish(first._id);
    expect(second).toEqual(first);
  });

  test('a deleted article cannot be published (409)', async () => {
    const article = await write(actors.tokens.writer, { title: 'Gone' });
    await server.request('DELETE', `/v1/articles/${article._id}`, { token: actors.tokens.writer });
    const response = await server.request('POST', `/v1/articles/${article._id}/publish`, { token: actors.tokens.superuser });
    expect(response.status).toBe(409);
    expect(response.body).toMatchObject({ status: 409, title: 'Conflict' });
  });
});

describe('deleting', () => {
  test('a deleted article answers 204, is hidden from everyone and is kept in the store', async () => {
    const article = await publish((await write(actors.tokens.writer, { title: 'Soon deleted' }))._id);
    const deleted = await server.request('DELETE', `/v1/articles/${article._id}`, { token: actors.tokens.writer });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    for (const token of [undefined, actors.tokens.writer, actors.tokens.superuser]) {
      expect((await server.request('GET', `/v1/articles/${article._id}`, { token })).status).toBe(404);
    }
    const list = await server.request('GET', '/v1/articles?limit=100');
    expect(list.body.items.map((item: { _id: string }) => item._id)).not.toContain(article._id);
    const row = await server.app.db.knex('publishing_articles').where({ id: article._id }).first();
    expect(row.status).toBe('deleted');
    expect((await server.request('DELETE', `/v1/articles/${article._id}`, { token: actors.tokens.writer })).status).toBe(404);
    expect((await server.request('PUT', `/v1/articles/${article._id}`, { token: actors.tokens.superuser, body: { title: 'x', text: 'y' } })).status).toBe(404);
  });
});

describe('reading', () => {
  let server2: TestServer;
  let actors2: Actors;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    server2 = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
    actors2 = await createActors(server2);
    const topic = await server2.request('POST', '/v1/topics', { token: actors2.tokens.superuser, body: { title: 'Databases' } });
    const other = await server2.request('POST', '/v1/topics', { token: actors2.tokens.superuser, body: { title: 'Gardening' } });
    const items: Array<[string, string, Record<string, unknown>, boolean]> = [
      [
        'pg',
        'writer',
        { title: 'PostgreSQL full-text search', text: 'Ranking documents with tsvector and GIN indexes', tags: ['postgres', 'search'], topic: topic.body._id },
        true,
      ],
      [
        'roses',
        'otherWriter',
        { title: 'Pruning roses', text: 'Cut above an outward-facing bud in late winter', tags: ['garden'], topic: other.body._id },
        true,
      ],
      ['index', 'editor', { title: 'Index types', text: 'B-tree, hash, GIN and GiST indexes compared', tags: ['postgres'], topic: topic.body._id }, true],
      ['draftW', 'writer', { title: 'Unfinished search notes', text: 'draft about search' }, false],
      ['draftO', 'otherWriter', { title: 'Other draft', text: 'not yet' }, false],
    ];
    for (const [key, who, body, published] of items) {
      const created = await server2.request('POST', '/v1/articles', { token: actors2.tokens[who as 'writer'], body });
      ids[key] = created.body._id;
      if (published) await server2.request('POST', `/v1/articles/${created.body._id}/publish`, { token: actors2.tokens.superuser });
    }
    ids.topic = topic.body._id;
  });
  afterAll(() => server2?.close());

  const titles = (body: { items: Array<{ _id: string }> }) => body.items.map((item) => Object.entries(ids).find(([, id]) => id === item._id)?.[0]);

  test('the public list shows published articles only, newest first, with the page bounds', async () => {
    const list = await server2.request('GET', '/v1/articles');
    expect(titles(list.body)).toEqual(['index', 'roses', 'pg']);
    expect(list.body).toMatchObject({ total: 3, limit: 20, offset: 0 });
  });

  test.each([
    ['limit=2', ['index', 'roses'], 3],
    ['limit=2&offset=2', ['pg'], 3],
    ['offset=10', [], 3],
  ])('pages with %s', async (query, want, total) => {
    const list = await server2.request('GET', `/v1/articles?${query}`);
    expect(titles(list.body)).toEqual(want);
    expect(list.body.total).toBe(total);
  });

  test.each([['limit=0'], ['limit=101'], ['offset=-1'], ['limit=abc'], ['status=deleted']])('%s is a 400 problem', async (query) => {
    const response = await server2.request('GET', `/v1/articles?${query}`);
    expect(response.status).toBe(400);
    expect(response.body.errors.length).toBeGreaterThan(0);
  });

  test.each([
    ['a tag', () => 'tag=postgres', ['index', 'pg']],
    ['a topic', () => `topic=${ids.topic}`, ['index', 'pg']],
    ['an author', () => `author=${actors2.ids.otherWriter}`, ['roses']],
    ['an author id that cannot exist', () => 'author=zzz', []],
    ['a search word, stemmed', () => 'q=indexing', ['index', 'pg']],
    ['a search phrase', () => `q=${encodeURIComponent('"full-text search"')}`, ['pg']],
    ['a search with an excluded word', () => `q=${encodeURIComponent('indexes -ranking')}`, ['index']],
    ['a search and a tag together', () => 'q=winter&tag=garden', ['roses']],
    ['a search that matches nothing', () => 'q=kubernetes', []],
  ])('filters by %s', async (_name, query, want) => {
    const list = await server2.request('GET', `/v1/articles?${query()}`);
    expect(titles(list.body)).toEqual(want);
    expect(list.body.total).toBe(want.length);
  });

  test("a writer lists only their own drafts; editors and superusers list everyone's", async () => {
    expect(titles((await server2.request('GET', '/v1/articles?status=draft', { token: actors2.tokens.writer })).body)).toEqual(['draftW']);
    expect(
      titles((await server2.request('GET', `/v1/articles?status=draft&author=${actors2.ids.otherWriter}`, { token: actors2.tokens.writer })).body),
    ).toEqual([]);
    expect(titles((await server2.request('GET', '/v1/articles?status=draft', { token: actors2.tokens.editor })).body)).toEqual(['draftO', 'draftW']);
    expect(titles((await server2.request('GET', '/v1/articles?status=draft&q=search', { token: actors2.tokens.superuser })).body)).toEqual(['draftW']);
  });

  test('drafts never show up in public searches', async () => {
    expect(titles((await server2.request('GET', '/v1/articles?q=unfinished')).body)).toEqual([]);
  });
});

describe('the wire', () => {
  test.each([['not-an-id'], ['ffffffffffffffffffffffff'], ['FFFFFFFFFFFFFFFFFFFFFFFF'], ['%27%3B--'], ['x'.repeat(64)]])(
    'article id %s is a 404 problem, never a 500',
    async (id) => {
      for (const [method, path, token] of [
        ['GET', `/v1/articles/${id}`, undefined],
        ['PUT', `/v1/articles/${id}`, actors.tokens.superuser],
        ['DELETE', `/v1/articles/${id}`, actors.tokens.superuser],
        ['POST', `/v1/articles/${id}/publish`, actors.tokens.superuser],
        ['GET', `/v1/writers/${id}`, undefined],
      ] as const) {
        const response = await server.request(method, path, { token, body: method === 'PUT' ? { title: 't', text: 't' } : undefined });
        expect({ method, status: response.status }).toEqual({ method, status: 404 });
        expect(response.headers.get('content-type')).toBe('application/problem+json');
      }
    },
  );

  test('malformed JSON is a 400 problem with the deprecation headers', async () => {
    const response = await server.request('POST', '/v1/articles', {
      token: actors.tokens.writer,
      rawBody: '{"title":',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ type: 'about:blank', title: 'Bad Request', status: 400, errors: [{ field: 'body', message: 'is not valid JSON' }] });
    expect(response.headers.get('deprecation')).toBe('true');
  });

  test('an unknown route under /v1 is a 404 problem with the deprecation headers', async () => {
    for (const [method, path] of [
      ['GET', '/v1/nothing'],
      ['GET', '/v1'],
      ['PATCH', '/v1/articles'],
    ]) {
      const response = await server.request(method as string, path as string, { unchecked: true });
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
      expect(response.body).toMatchObject({ type: 'about:blank', title: 'Not Found', status: 404 });
      expect(response.headers.get('link')).toContain('rel="deprecation"');
    }
  });

  test.each([
    ['a malformed bearer token', { authorization: 'Bearer not.a.token' }],
    ['another scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['a malformed x-access-token', { 'x-access-token': 'garbage' }],
  ])('%s is a 401 problem, on public operations too', async (_name, headers) => {
    for (const path of ['/v1/articles', '/v1/topics', '/v1/writers']) {
      const response = await server.request('GET', path, { headers });
      expect(response.status).toBe(401);
      expect(response.body).toMatchObject({ title: 'Unauthorized', status: 401 });
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  test('a token of the User Account API is not a publishing token', async () => {
    const account = await server.request('POST', '/api/auth', { body: { name: 'admin', password: 'admin-password' } });
    expect(account.status).toBe(200);
    const response = await server.request('POST', '/v1/articles', { token: account.body.accessToken, body: { title: 't', text: 't' } });
    expect(response.status).toBe(401);
  });

  test('the deprecation link points at documentation the server serves', async () => {
    const response = await fetch(`${server.url}/docs/publishing.md`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/markdown');
    expect(await response.text()).toContain('Article Publishing API');
  });
});
