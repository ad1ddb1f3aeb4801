import { startServer, type TestServer } from '../../support/app.js';
import { createActors, graphql, SUPERUSER, type Actors } from './support.js';

// Paging of the /v1 lists and GraphQL `articles` (docs/publishing.md, "Lists at any size"): the
// `next` cursor, the offset cap and the bounded total.

let server: TestServer | undefined;
let actors: Actors;
let topic: string;
const articleIds: string[] = [];
const draftIds: string[] = [];

function api(): TestServer {
  if (!server) throw new Error('the server did not start');
  return server;
}

async function writeArticle(who: 'writer' | 'otherWriter', n: number, publish: boolean): Promise<string> {
  const body = {
    title: `Article ${n}`,
    text: n % 2 === 0 ? `An even story about lighthouses, number ${n}` : `An odd story, number ${n}`,
    tags: [`t${n % 3}`],
    topic: n % 2 === 0 ? topic : null,
  };
  const created = await api().request('POST', '/v1/articles', { token: actors.tokens[who], body });
  expect(created.status).toBe(201);
  if (publish) expect((await api().request('POST', `/v1/articles/${created.body._id}/publish`, { token: actors.tokens.editor })).status).toBe(200);
  return created.body._id;
}

interface Page {
  items: Array<{ _id: string }>;
  total: number;
  totalExact: boolean;
  limit: number;
  offset: number;
  next: string | null;
}

/** Walks a REST list by its `next` cursors, `between` running after each page; answers every page. */
async function walk(path: string, token?: string, between: () => Promise<void> = async () => undefined): Promise<Page[]> {
  const pages: Page[] = [];
  let after: string | null = null;
  do {
    const separator = path.includes('?') ? '&' : '?';
    const response = await api().request('GET', after === null ? path : `${path}${separator}after=${encodeURIComponent(after)}`, token ? { token } : {});
    expect(response.status).toBe(200);
    pages.push(response.body);
    after = response.body.next;
    if (pages.length > 100) throw new Error('the walk does not end');
    await between();
  } while (after !== null);
  return pages;
}

const idsOf = (pages: Page[]) => pages.flatMap((page) => page.items.map((item) => item._id));

beforeAll(async () => {
  server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
  actors = await createActors(server);
  topic = (await server.request('POST', '/v1/topics', { token: actors.tokens.superuser, body: { title: 'Lighthouses' } })).body._id;
  for (let n = 0; n < 12; n++) articleIds.push(await writeArticle(n % 3 === 0 ? 'otherWriter' : 'writer', n, true));
  for (let n = 12; n < 17; n++) draftIds.push(await writeArticle(n % 2 === 0 ? 'otherWriter' : 'writer', n, false));
  articleIds.reverse(); // newest first
  draftIds.reverse();
});
afterAll(async () => {
  await server?.close();
});

describe('the next cursor', () => {
  test('walking by cursor returns every published article exactly once, newest first, and the last page has no next', async () => {
    const pages = await walk('/v1/articles?limit=5');
    expect(pages.map((page) => page.items.length)).toEqual([5, 5, 2]);
    expect(idsOf(pages)).toEqual(articleIds);
    expect(pages.at(-1)?.next).toBeNull();
    for (const page of pages) expect(page).toMatchObject({ total: 12, totalExact: true, limit: 5, offset: 0 });
  });

  test('articles published between pages neither repeat nor push an article out of the walk', async () => {
    const before = (await api().request('GET', '/v1/articles?limit=100')).body.items.map((item: { _id: string }) => item._id);
    let n = 100;
    const pages = await walk('/v1/articles?limit=3', undefined, async () => {
      await writeArticle('writer', n++, true);
      await writeArticle('otherWriter', n++, true);
    });
    const seen = idsOf(pages);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(before);
  });

  test.each<[string, () => string, () => string[], 'writer' | 'editor' | undefined]>([
    ['a topic', () => `topic=${topic}`, () => articleIds.filter((_, index) => (11 - index) % 2 === 0), undefined],
    ['a tag', () => 'tag=t1', () => articleIds.filter((_, index) => (11 - index) % 3 === 1), undefined],
    ['an author', () => `author=${actors.ids.otherWriter}`, () => articleIds.filter((_, index) => (11 - index) % 3 === 0), undefined],
    ['a search', () => 'q=lighthouse', () => articleIds.filter((_, index) => (11 - index) % 2 === 0), undefined],
    ['status=draft (a writer: own drafts)', () => 'status=draft', () => draftIds.filter((_, index) => (16 - index) % 2 === 1), 'writer'],
    ['status=draft (an editor: all drafts)', () => 'status=draft', () => draftIds, 'editor'],
  ])('the cursor walks a list filtered by %s in its order', async (_name, query, want, who) => {
    const token = who === undefined ? undefined : actors.tokens[who];
    // Only the first 12 articles: the test above published more, newer ones; a topic/tag/author/q
    // filter of those later articles is excluded by walking below the oldest of them.
    const pages = await walk(`/v1/articles?limit=2&${query()}`, token);
    const seen = idsOf(pages).filter((id) => articleIds.includes(id) || draftIds.includes(id));
    expect(seen).toEqual(want());
    expect(new Set(idsOf(pages)).size).toBe(idsOf(pages).length);
    expect(pages[0]?.total).toBe(idsOf(pages).length);
  });

  test('writers and topics page by cursor too', async () => {
    const writers = await walk('/v1/writers?limit=1');
    const all = (await api().request('GET', '/v1/writers?limit=100')).body.items.map((item: { _id: string }) => item._id);
    expect(idsOf(writers)).toEqual(all);
    expect(writers.length).toBe(all.length);
    await api().request('POST', '/v1/topics', { token: actors.tokens.superuser, body: { title: 'Architecture' } });
    const topics = await walk('/v1/topics?limit=1');
    expect(topics.flatMap((page) => page.items.map((item) => (item as unknown as { title: string }).title))).toEqual(['Architecture', 'Lighthouses']);
  });

  test('listing writers and batch-loading authors never read a password hash', async () => {
    const statements: string[] = [];
    const onQuery = (query: { sql: string }) => statements.push(query.sql);
    api().app.db.knex.on('query', onQuery);
    try {
      expect((await api().request('GET', '/v1/writers?limit=2')).status).toBe(200);
      expect((await graphql(api(), actors.tokens.superuser, '{ articles(limit: 3) { items { author { name } } } }')).body.errors).toBeUndefined();
    } finally {
      api().app.db.knex.off('query', onQuery);
    }
    // Token checks read the caller by id; the list and the loader are the `order by` and `in (…)` reads.
    const reads = statements.filter((sql) => /from "publishing_users"/i.test(sql) && / in \(|order by/i.test(sql));
    expect(reads.length).toBeGreaterThanOrEqual(2);
    for (const sql of reads) expect(sql).not.toMatch(/password_hash/);
  });

  test('GraphQL articles pages by the same cursor, with total, totalExact and next', async () => {
    const query = 'query($after: String) { articles(limit: 5, after: $after) { items { _id } total totalExact next } }';
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const response = await graphql(api(), actors.tokens.reader, query, { after });
      expect(response.body.errors).toBeUndefined();
      const page = response.body.data.articles;
      seen.push(...page.items.map((item: { _id: string }) => item._id));
      expect(page.totalExact).toBe(true);
      after = page.next;
    } while (after !== null);
    const rest = (await api().request('GET', '/v1/articles?limit=100')).body;
    expect(seen).toEqual(rest.items.map((item: { _id: string }) => item._id));
    const bad = await graphql(api(), actors.tokens.reader, '{ articles(after: "nonsense") { total } }');
    expect(bad.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', errors: [{ field: 'after' }] });
    const far = await graphql(api(), actors.tokens.reader, '{ topics(offset: 10001) { total } }');
    expect(far.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', errors: [{ field: 'offset' }] });
  });
});

describe('filters stay right as articles change', () => {
  test('the tag lists follow publishing, retagging and deleting', async () => {
    const tagged = async (query: string) => idsOf(await walk(`/v1/articles?limit=1&${query}`, actors.tokens.editor));
    const id = await writeArticle('writer', 500, false);
    await api().request('PUT', `/v1/articles/${id}`, {
      token: actors.tokens.writer,
      body: { title: 'Moving', text: 'Tags move', tags: ['moving', 'moving-too'] },
    });
    expect(await tagged('status=draft&tag=moving')).toEqual([id]);
    expect(await tagged('tag=moving')).toEqual([]);
    await api().request('POST', `/v1/articles/${id}/publish`, { token: actors.tokens.editor });
    expect(await tagged('status=draft&tag=moving')).toEqual([]);
    expect(await tagged('tag=moving')).toEqual([id]);
    await api().request('PUT', `/v1/articles/${id}`, { token: actors.tokens.writer, body: { title: 'Moving', text: 'Tags move', tags: ['moved'] } });
    expect(await tagged('tag=moving')).toEqual([]);
    expect(await tagged('tag=moved')).toEqual([id]);
    expect((await api().request('GET', '/v1/articles?tag=moved&limit=1')).body).toMatchObject({ total: 1, totalExact: true });
    await api().request('DELETE', `/v1/articles/${id}`, { token: actors.tokens.writer });
    expect(await tagged('tag=moved')).toEqual([]);
  });

  test('a search finds older matches behind more recent articles than it walks in order, and counts a common word as at least what it saw', async () => {
    const knex = api().app.db.knex;
    const before = idsOf(await walk('/v1/articles?limit=2&q=lighthouse'));
    const shape = await knex('publishing_articles').where({ id: articleIds[0] }).first();
    // 2,100 newer published articles (shaped like one the server wrote) without the word.
    await knex.raw(
      `INSERT INTO publishing_articles (id, title, text, author_id, topic_id, tags, files, status, published_at, created_at, modified_at)
       SELECT 'f' || lpad(to_hex(g), 23, '0'), 'Filler', 'Nothing to see', author_id, topic_id, '[]'::jsonb, files, status,
              now() + g * interval '1 second', created_at, modified_at
       FROM publishing_articles, generate_series(1, ?) g WHERE id = ?`,
      [2_100, shape.id],
    );
    try {
      expect(idsOf(await walk('/v1/articles?limit=2&q=lighthouse'))).toEqual(before);
      expect(before.length).toBeGreaterThan(2);
      // The word now matches every one of the 2,000 newest articles: counting all its matches would
      // cost O(matches), so total says "at least" what the walk over those rows saw.
      await knex('publishing_articles').where('id', 'like', 'f%').update({ text: 'Another lighthouse' });
      expect((await api().request('GET', '/v1/articles?q=lighthouse&limit=1')).body).toMatchObject({ total: 2000, totalExact: false });
    } finally {
      await knex('publishing_articles').where('id', 'like', 'f%').delete();
    }
  });
});

describe('bad paging is a 400 problem naming the field', () => {
  test.each<[string, () => Promise<string>, string]>([
    ['offset above the cap', async () => '/v1/articles?offset=10001', 'offset'],
    ['a cursor that was never handed out', async () => '/v1/articles?after=bm9wZQ', 'after'],
    [
      'a cursor with a forged sort key',
      async () => `/v1/articles?after=${Buffer.from(JSON.stringify(['articles.published', "x' OR 1=1", articleIds[0]])).toString('base64url')}`,
      'after',
    ],
    ['a writers cursor given to the article list', async () => `/v1/articles?after=${(await api().request('GET', '/v1/writers?limit=1')).body.next}`, 'after'],
    [
      'a published cursor given to the drafts list',
      async () => `/v1/articles?status=draft&after=${(await api().request('GET', '/v1/articles?limit=1')).body.next}`,
      'after',
    ],
    ['a cursor and an offset together', async () => `/v1/articles?offset=1&after=${(await api().request('GET', '/v1/articles?limit=1')).body.next}`, 'offset'],
    ['offset above the cap on writers', async () => '/v1/writers?offset=10001', 'offset'],
    ['offset above the cap on topics', async () => '/v1/topics?offset=20000', 'offset'],
  ])('%s', async (_name, path, field) => {
    const response = await api().request('GET', await path(), { token: actors.tokens.editor });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.body.errors.map((error: { field: string }) => error.field)).toContain(field);
  });

  test('the largest offset is still answered', async () => {
    const response = await api().request('GET', '/v1/articles?offset=10000');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ items: [], offset: 10000, next: null });
  });
});

describe('total', () => {
  test('is exact up to 10000 and, beyond, 10000 with totalExact false; the pages still walk on', async () => {
    const knex = api().app.db.knex;
    const shape = await knex('publishing_articles').where({ id: articleIds[0] }).first();
    // Rows shaped exactly like one the server wrote (copied from it), by an author with no other
    // articles (the superuser), so the count is known.
    await knex.raw(
      `INSERT INTO publishing_articles (id, title, text, author_id, topic_id, tags, files, status, published_at, created_at, modified_at)
       SELECT lpad(to_hex(g), 24, '0'), title, text, ?, topic_id, '[]'::jsonb, files, status,
              published_at - g * interval '1 second', created_at - g * interval '1 second', modified_at
       FROM publishing_articles, generate_series(1, ?) g WHERE id = ?`,
      [actors.ids.superuser, 10_001, shape.id],
    );
    const bulk = `author=${actors.ids.superuser}`;
    const over = await api().request('GET', `/v1/articles?${bulk}&limit=100`);
    expect(over.body).toMatchObject({ total: 10_000, totalExact: false });
    expect(over.body.next).not.toBeNull();
    const last = await api().request('GET', `/v1/articles?${bulk}&offset=10000&limit=100`);
    expect(last.body.items).toHaveLength(1);
    await knex('publishing_articles')
      .where({ id: '1'.padStart(24, '0') })
      .update({ status: 'deleted' });
    expect((await api().request('GET', `/v1/articles?${bulk}&limit=1`)).body).toMatchObject({ total: 10_000, totalExact: true });
    await knex('publishing_articles').where({ author_id: actors.ids.superuser }).delete();
  });

  test('counts the whole filtered list on every page, not what is left after the cursor', async () => {
    const first = await api().request('GET', '/v1/articles?tag=t2&limit=1');
    const second = await api().request('GET', `/v1/articles?tag=t2&limit=1&after=${first.body.next}`);
    expect(second.body.total).toBe(first.body.total);
    expect(first.body.total).toBeGreaterThan(1);
  });
});
