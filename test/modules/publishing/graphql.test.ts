import { getIntrospectionQuery } from 'graphql';
import { startServer, type TestServer } from '../../support/app.js';
import { GRAPHQL_MAX_COST, GRAPHQL_MAX_DEPTH } from '../../../src/modules/publishing/publishing-module.js';
import { createActors, graphql, SUPERUSER, type Actors } from './support.js';

let server: TestServer;
let actors: Actors;
let topicId: string;

beforeAll(async () => {
  server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
  actors = await createActors(server);
});
afterAll(() => server?.close());

const ARTICLE = '_id title text status tags files { url fileType } publishedAt createdAt modifiedAt author { _id name email role } topic { _id title }';

describe('access', () => {
  test('without a token, /graphql answers 401', async () => {
    const response = await graphql(server, undefined, '{ me { _id } }');
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(response.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });

  test('a bad token is a 401 too', async () => {
    expect((await graphql(server, 'not.a.token', '{ me { _id } }')).status).toBe(401);
  });

  test('any signed-in user (a reader too) may query; x-access-token works as well', async () => {
    const response = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-token': actors.tokens.reader },
      body: JSON.stringify({ query: '{ me { _id role email } }' }),
    });
    expect(await response.json()).toEqual({ data: { me: { _id: actors.ids.reader, role: 'reader', email: 'reader@example.com' } } });
  });

  test('GET runs queries (GraphQL over HTTP)', async () => {
    const response = await fetch(`${server.url}/graphql?query=${encodeURIComponent('{ me { role } }')}`, {
      headers: { authorization: `Bearer ${actors.tokens.editor}` },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { me: { role: 'editor' } } });
  });

  test('GET refuses mutations (405)', async () => {
    const query = 'mutation { createTopic(input: {title: "Nope"}) { _id } }';
    const response = await fetch(`${server.url}/graphql?query=${encodeURIComponent(query)}`, {
      headers: { authorization: `Bearer ${actors.tokens.superuser}` },
    });
    expect(response.status).toBe(405);
  });
});

describe('queries and mutations share the REST rules', () => {
  test('createTopic: superusers only, unique titles', async () => {
    const created = await graphql(server, actors.tokens.superuser, 'mutation { createTopic(input: {title: "Graphs"}) { _id title } }');
    topicId = created.body.data.createTopic._id;
    expect(created.body.data.createTopic.title).toBe('Graphs');
    const forbidden = await graphql(server, actors.tokens.editor, 'mutation { createTopic(input: {title: "Other"}) { _id } }');
    expect(forbidden.body.errors[0].extensions).toMatchObject({ code: 'FORBIDDEN', status: 403 });
    const duplicate = await graphql(server, actors.tokens.superuser, 'mutation { createTopic(input: {title: "graphs"}) { _id } }');
    expect(duplicate.body.errors[0].extensions).toMatchObject({ code: 'CONFLICT', status: 409 });
  });

  test('createArticle, updateArticle, publishArticle and deleteArticle walk an article through its life', async () => {
    const create = await graphql(server, actors.tokens.writer, `mutation ($input: ArticleInput!) { createArticle(input: $input) { ${ARTICLE} } }`, {
      input: {
        title: 'Over GraphQL',
        text: 'Written with a mutation',
        tags: ['gql'],
        files: [{ url: 'https://x.example/a', fileType: 'text/plain' }],
        topic: topicId,
      },
    });
    const article = create.body.data.createArticle;
    expect(article).toMatchObject({
      status: 'draft',
      publishedAt: null,
      author: { _id: actors.ids.writer, email: 'writer@example.com' },
      topic: { _id: topicId, title: 'Graphs' },
    });

    const asReader = await graphql(
      server,
      actors.tokens.reader,
      `
        query ($id: ID!) {
          article(id: $id) {
            _id
          }
        }
      `,
      { id: article._id },
    );
    expect(asReader.body).toEqual({ data: { article: null } });

    const forbiddenUpdate = await graphql(
      server,
      actors.tokens.reader,
      `
        mutation ($id: ID!) {
          updateArticle(id: $id, input: { title: "x", text: "y" }) {
            _id
          }
        }
      `,
      { id: article._id },
    );
    expect(forbiddenUpdate.body.errors[0].extensions.code).toBe('FORBIDDEN');

    const update = await graphql(
      server,
      actors.tokens.editor,
      `
        mutation ($id: ID!) {
          updateArticle(id: $id, input: { title: "Edited", text: "By an editor" }) {
            title
            tags
            topic {
              _id
            }
            author {
              _id
            }
          }
        }
      `,
      { id: article._id },
    );
    expect(update.body.data.updateArticle).toEqual({ title: 'Edited', tags: [], topic: null, author: { _id: actors.ids.writer } });

    const writerPublishes = await graphql(
      server,
      actors.tokens.writer,
      `
        mutation ($id: ID!) {
          publishArticle(id: $id) {
            status
          }
        }
      `,
      { id: article._id },
    );
    expect(writerPublishes.body.errors[0].extensions).toMatchObject({ code: 'FORBIDDEN', status: 403 });
    const publish = await graphql(
      server,
      actors.tokens.editor,
      `
        mutation ($id: ID!) {
          publishArticle(id: $id) {
            status
            publishedAt
          }
        }
      `,
      { id: article._id },
    );
    expect(publish.body.data.publishArticle.status).toBe('published');

    const visible = await graphql(
      server,
      actors.tokens.reader,
      `
        query ($id: ID!) {
          article(id: $id) {
            title
            author {
              name
              email
            }
          }
        }
      `,
      { id: article._id },
    );
    expect(visible.body.data.article).toEqual({ title: 'Edited', author: { name: 'writer', email: null } });

    const editorDeletes = await graphql(
      server,
      actors.tokens.editor,
      `
        mutation ($id: ID!) {
          deleteArticle(id: $id)
        }
      `,
      { id: article._id },
    );
    expect(editorDeletes.body.errors[0].extensions.code).toBe('FORBIDDEN');
    const remove = await graphql(
      server,
      actors.tokens.writer,
      `
        mutation ($id: ID!) {
          deleteArticle(id: $id)
        }
      `,
      { id: article._id },
    );
    expect(remove.body.data.deleteArticle).toBe(article._id);
    const republish = await graphql(
      server,
      actors.tokens.superuser,
      `
        mutation ($id: ID!) {
          publishArticle(id: $id) {
            status
          }
        }
      `,
      { id: article._id },
    );
    expect(republish.body.errors[0].extensions).toMatchObject({ code: 'CONFLICT', status: 409 });
    const gone = await graphql(
      server,
      actors.tokens.superuser,
      `
        query ($id: ID!) {
          article(id: $id) {
            _id
          }
        }
      `,
      { id: article._id },
    );
    expect(gone.body.data.article).toBeNull();
  });

  test('invalid input is BAD_USER_INPUT with the same field errors as REST', async () => {
    const response = await graphql(server, actors.tokens.writer, 'mutation { createArticle(input: {title: " ", text: "x", topic: "nope"}) { _id } }');
    expect(response.body.errors[0].extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      status: 400,
      errors: [
        { field: 'title', message: 'must not be blank' },
        { field: 'topic', message: 'must be a topic id' },
      ],
    });
  });

  test.each([
    ['an over-long title, emoji counted as characters', { title: '😀'.repeat(301), text: 'x' }],
    ['too many tags, one empty and one too long', { title: 'T', text: 'x', tags: [...Array.from({ length: 20 }, (_, i) => `t${i}`), '', 'y'.repeat(51)] }],
    ['a file that is no URL with an empty type', { title: 'T', text: 'x', files: [{ url: 'not a url', fileType: '' }] }],
  ])('input outside the contract (%s) gets the very violations REST answers', async (_name, input) => {
    const rest = await server.request('POST', '/v1/articles', { token: actors.tokens.writer, body: input });
    expect(rest.status).toBe(400);
    expect(rest.body.errors.length).toBeGreaterThan(0);
    const response = await graphql(server, actors.tokens.writer, 'mutation ($input: ArticleInput!) { createArticle(input: $input) { _id } }', { input });
    expect(response.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', status: 400, errors: rest.body.errors });
  });

  test('articles filters keep the contract bounds of the REST query parameters, with the same violations', async () => {
    const rest = await server.request('GET', `/v1/articles?q=&tag=${'t'.repeat(51)}`);
    expect(rest.status).toBe(400);
    const response = await graphql(server, actors.tokens.reader, `{ articles(filters: {q: "", tag: "${'t'.repeat(51)}"}) { total } }`);
    expect(response.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', errors: rest.body.errors });
    expect(rest.body.errors).toEqual(
      expect.arrayContaining([
        { field: 'q', message: 'must NOT have fewer than 1 characters' },
        { field: 'tag', message: 'must NOT have more than 50 characters' },
      ]),
    );
  });

  test('articles applies the REST filters, visibility and page bounds', async () => {
    const ids: string[] = [];
    for (const title of ['Alpha search', 'Beta', 'Gamma search']) {
      const created = await graphql(
        server,
        actors.tokens.otherWriter,
        `mutation { createArticle(input: {title: "${title}", text: "text", tags: ["greek"]}) { _id } }`,
      );
      ids.push(created.body.data.createArticle._id);
      await graphql(server, actors.tokens.editor, `mutation { publishArticle(id: "${created.body.data.createArticle._id}") { _id } }`);
    }
    await graphql(server, actors.tokens.otherWriter, 'mutation { createArticle(input: {title: "Delta search draft", text: "text", tags: ["greek"]}) { _id } }');
    const published = await graphql(
      server,
      actors.tokens.reader,
      '{ articles(filters: {tag: "greek", q: "search"}, limit: 1, offset: 1) { total limit offset items { title } } }',
    );
    expect(published.body.data.articles).toEqual({ total: 2, limit: 1, offset: 1, items: [{ title: 'Alpha search' }] });
    const drafts = await graphql(server, actors.tokens.otherWriter, '{ articles(filters: {status: draft}) { items { title } } }');
    expect(drafts.body.data.articles.items).toEqual([{ title: 'Delta search draft' }]);
    const readerDrafts = await graphql(server, actors.tokens.reader, '{ articles(filters: {status: draft}) { total } }');
    expect(readerDrafts.body.errors[0].extensions.code).toBe('FORBIDDEN');
    const tooMany = await graphql(server, actors.tokens.reader, '{ articles(limit: 500) { total } }');
    expect(tooMany.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', errors: [{ field: 'limit', message: 'must be between 1 and 100' }] });
  });

  test('writers, writer and topics answer as REST does (emails only for self and superusers)', async () => {
    const asWriter = await graphql(
      server,
      actors.tokens.writer,
      `{ writers(limit: 100) { total items { _id email role } } reader: writer(id: "${actors.ids.reader}") { _id } editor: writer(id: "${actors.ids.editor}") { name email } topics { total items { title } } }`,
    );
    const data = asWriter.body.data;
    expect(data.writers.items.map((item: { role: string }) => item.role)).not.toContain('reader');
    expect(data.writers.items.filter((item: { email: string | null }) => item.email !== null)).toEqual([
      { _id: actors.ids.writer, email: 'writer@example.com', role: 'writer' },
    ]);
    expect(data.reader).toBeNull();
    expect(data.editor).toEqual({ name: 'editor', email: null });
    expect(data.topics.items).toEqual([{ title: 'Graphs' }]);
    const asSuperuser = await graphql(server, actors.tokens.superuser, `{ writer(id: "${actors.ids.reader}") { email role } }`);
    expect(asSuperuser.body.data.writer).toEqual({ email: 'reader@example.com', role: 'reader' });
  });
});

/**
 * Counts the SQL statements on publishing tables only: background work of other families (the
 * operation worker's poll, sweepers) shares the store and would make the counts racy.
 */
function publishingStatementCounter(): { onQuery: (query: { sql?: string }) => void; readonly count: number } {
  let count = 0;
  return {
    onQuery: (query) => {
      if (/\bpublishing_/.test(query.sql ?? '')) count++;
    },
    get count() {
      return count;
    },
  };
}

describe('batch loading', () => {
  async function statementsOf(run: () => Promise<unknown>): Promise<number> {
    const counter = publishingStatementCounter();
    const onQuery = counter.onQuery;
    server.app.db.knex.on('query', onQuery);
    try {
      await run();
    } finally {
      server.app.db.knex.off('query', onQuery);
    }
    return counter.count;
  }

  test('a list with authors and topics takes the same number of SQL statements for 2 and for 20 articles', async () => {
    const fresh = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
    try {
      const crew = await createActors(fresh);
      const topicsCreated: string[] = [];
      for (const title of ['One', 'Two', 'Three']) {
        const topic = await fresh.request('POST', '/v1/topics', { token: crew.tokens.superuser, body: { title } });
        topicsCreated.push(topic.body._id);
      }
      const authors = [crew.tokens.writer, crew.tokens.otherWriter, crew.tokens.editor];
      const query = '{ articles(limit: 100) { total items { title author { name } topic { title } } } }';
      const measure = async () => {
        const counter = publishingStatementCounter();
        fresh.app.db.knex.on('query', counter.onQuery);
        const response = await graphql(fresh, crew.tokens.reader, query);
        fresh.app.db.knex.off('query', counter.onQuery);
        return { count: counter.count, items: response.body.data.articles.items.length };
      };
      const writeAndPublish = async (from: number, to: number) => {
        for (let i = from; i < to; i++) {
          const created = await fresh.request('POST', '/v1/articles', {
            token: authors[i % 3],
            body: { title: `A${i}`, text: 't', topic: topicsCreated[i % 3] },
          });
          await fresh.request('POST', `/v1/articles/${created.body._id}/publish`, { token: crew.tokens.editor });
        }
      };
      await writeAndPublish(0, 2);
      const small = await measure();
      await writeAndPublish(2, 20);
      const large = await measure();
      expect([small.items, large.items]).toEqual([2, 20]);
      // the caller, the article page, one batch of authors, one batch of topics
      expect(large.count).toBe(small.count);
      expect(large.count).toBeLessThanOrEqual(4);
    } finally {
      await fresh.close();
    }
  });

  test('the same author asked for twice in one request is read once', async () => {
    const count = await statementsOf(() =>
      graphql(
        server,
        actors.tokens.reader,
        `{ a: writer(id: "${actors.ids.writer}") { name } b: writer(id: "${actors.ids.writer}") { name } c: writer(id: "${actors.ids.editor}") { name } }`,
      ),
    );
    expect(count).toBe(2);
  });
});

describe('limits', () => {
  test('the standard introspection query is allowed', async () => {
    const response = await graphql(server, actors.tokens.reader, getIntrospectionQuery());
    expect(response.status).toBe(200);
    expect(response.body.data.__schema.queryType.name).toBe('Query');
  });

  test('a query nested deeper than the limit is rejected before it runs', async () => {
    const deep = `{ __schema { types { fields { type ${'{ ofType '.repeat(GRAPHQL_MAX_DEPTH)}{ name }${' }'.repeat(GRAPHQL_MAX_DEPTH)} } } } }`;
    const response = await graphql(server, actors.tokens.reader, deep);
    expect(response.body.data).toBeUndefined();
    expect(response.body.errors[0].extensions.code).toBe('QUERY_TOO_DEEP');
    expect(response.body.errors[0].message).toMatch(new RegExp(`at most ${GRAPHQL_MAX_DEPTH}`));
  });

  test('a query whose estimated cost is over the limit is rejected before it runs', async () => {
    const page = 'articles(limit: 100) { items { title author { name } topic { title } } }';
    const aliases = Array.from({ length: 20 }, (_, i) => `a${i}: ${page}`).join(' ');
    const counter = publishingStatementCounter();
    server.app.db.knex.on('query', counter.onQuery);
    const response = await graphql(server, actors.tokens.reader, `{ ${aliases} }`);
    server.app.db.knex.off('query', counter.onQuery);
    const statements = counter.count;
    expect(response.body.data).toBeUndefined();
    expect(response.body.errors[0].extensions.code).toBe('QUERY_TOO_COSTLY');
    expect(response.body.errors[0].message).toMatch(new RegExp(`at most ${GRAPHQL_MAX_COST}`));
    // only the caller's lookup ran; no article was read
    expect(statements).toBe(1);
  });

  test('a page size from a variable is costed at the largest page', async () => {
    const page = 'articles(limit: $n) { items { title author { name } topic { title } } }';
    const aliases = Array.from({ length: 20 }, (_, i) => `a${i}: ${page}`).join(' ');
    const response = await graphql(server, actors.tokens.reader, `query ($n: Int) { ${aliases} }`, { n: 1 });
    expect(response.body.errors[0].extensions.code).toBe('QUERY_TOO_COSTLY');
  });
});
