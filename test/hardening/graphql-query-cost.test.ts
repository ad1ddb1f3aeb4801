import { startServer, type TestServer } from '../support/app.js';
import { GRAPHQL_MAX_COST, GRAPHQL_MAX_TOKENS } from '../../src/modules/publishing/publishing-module.js';
import { PUBLISHING_STORE_FIELD_COST } from '../../src/handlers/publishing-graphql.js';
import { createActors, graphql, SUPERUSER, type Actors } from '../modules/publishing/support.js';

let server: TestServer;
let actors: Actors;

beforeAll(async () => {
  server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
  actors = await createActors(server);
});
afterAll(() => server?.close());

/** Fragments F0..Fn on `type`, each spreading the previous one twice: Fn stands for 2^n copies of `leaf`. */
function doublingFragments(n: number, type: string, leaf: string): string {
  let fragments = `fragment F0 on ${type} { ${leaf} }\n`;
  for (let i = 1; i <= n; i++) fragments += `fragment F${i} on ${type} { ...F${i - 1} ...F${i - 1} }\n`;
  return fragments;
}

/** Counts the SQL statements on publishing tables while `run` runs (background workers use others). */
async function statementsDuring(run: () => Promise<unknown>): Promise<number> {
  let statements = 0;
  const onQuery = (query: { sql: string }) => {
    if (query.sql.includes('publishing_')) statements++;
  };
  server.app.db.knex.on('query', onQuery);
  try {
    await run();
  } finally {
    server.app.db.knex.off('query', onQuery);
  }
  return statements;
}

describe('fragments that multiply out', () => {
  test('an ~880-byte query of fragments each spreading the previous twice is refused in well under a second', async () => {
    const query = `query { me { ...F21 } }\n${doublingFragments(21, 'Writer', 'name')}`;
    expect(Buffer.byteLength(query)).toBeLessThan(1000);
    const started = performance.now();
    const response = await graphql(server, actors.tokens.reader, query);
    const elapsed = performance.now() - started;
    expect(response.body.data).toBeUndefined();
    expect(response.body.errors[0].extensions.code).toBe('QUERY_TOO_COSTLY');
    expect(response.body.errors[0].message).toMatch(new RegExp(`at most ${GRAPHQL_MAX_COST}`));
    expect(elapsed).toBeLessThan(1000);
  });

  test('a fragment spread many times is costed every time it is spread (memoised, not counted once)', async () => {
    // articles(limit: 100) costs 25 + 100 × (items 1 + 2^n titles): 2^5 fits under 5000, 2^6 does not.
    const page = (n: number) => `query { articles(limit: 100) { items { ...F${n} } } }\n${doublingFragments(n, 'Article', 'title')}`;
    const fits = await graphql(server, actors.tokens.reader, page(5));
    expect(fits.body.errors).toBeUndefined();
    expect(fits.body.data.articles.items).toEqual([]);
    const over = await graphql(server, actors.tokens.reader, page(6));
    expect(over.body.errors[0].extensions.code).toBe('QUERY_TOO_COSTLY');
  });

  test('fragments nesting past the depth limit, each spreading the previous twice, are refused as too deep, fast', async () => {
    let fragments = 'fragment T0 on __Type { name }\n';
    for (let i = 1; i <= 24; i++) fragments += `fragment T${i} on __Type { ofType { ...T${i - 1} } o: ofType { ...T${i - 1} } }\n`;
    const started = performance.now();
    const response = await graphql(
      server,
      actors.tokens.reader,
      `
        query {
          __type(name: "Query") {
            ...T24
          }
        }
        ${fragments}
      `,
    );
    expect(performance.now() - started).toBeLessThan(1000);
    expect(response.body.data).toBeUndefined();
    expect(response.body.errors.map((error: { extensions: { code: string } }) => error.extensions.code)).toContain('QUERY_TOO_DEEP');
  });
});

describe('fields that read the store', () => {
  test('`me` aliased 2,400 times is refused before parsing finishes (token cap)', async () => {
    const query = `{ ${Array.from({ length: 2400 }, (_, i) => `a${i}: me { _id }`).join(' ')} }`;
    let response: Awaited<ReturnType<typeof graphql>> | undefined;
    const statements = await statementsDuring(async () => {
      response = await graphql(server, actors.tokens.reader, query);
    });
    expect(response?.body.data).toBeUndefined();
    expect(response?.body.errors[0].extensions.code).toBe('QUERY_TOO_LARGE');
    expect(response?.body.errors[0].message).toMatch(new RegExp(`at most ${GRAPHQL_MAX_TOKENS}`));
    // only the caller's lookup ran
    expect(statements).toBe(1);
  });

  test('aliases of a store field add up at its real cost, under the token cap too', async () => {
    const over = Math.floor(GRAPHQL_MAX_COST / (PUBLISHING_STORE_FIELD_COST + 1)) + 1;
    const query = `{ ${Array.from({ length: over }, (_, i) => `a${i}: article(id: "${i}") { _id }`).join(' ')} }`;
    const statements = await statementsDuring(async () => {
      const response = await graphql(server, actors.tokens.reader, query);
      expect(response.body.errors[0].extensions.code).toBe('QUERY_TOO_COSTLY');
    });
    expect(statements).toBe(1);
  });

  test('`me` asked for under many aliases is read from the store once', async () => {
    const aliases = 100;
    const query = `{ ${Array.from({ length: aliases }, (_, i) => `a${i}: me { _id role }`).join(' ')} }`;
    let data: Record<string, unknown> = {};
    const statements = await statementsDuring(async () => {
      const response = await graphql(server, actors.tokens.reader, query);
      expect(response.body.errors).toBeUndefined();
      data = response.body.data;
    });
    expect(Object.keys(data)).toHaveLength(aliases);
    expect(data.a99).toEqual({ _id: actors.ids.reader, role: 'reader' });
    // the caller's lookup, then one read for every `me`
    expect(statements).toBe(2);
  });
});
