import { foldUserName } from '../../../src/auth/user-name.js';
import { startServer, type TestServer } from '../../support/app.js';
import { bootstrapAdmin, call, createAccount, DEFAULT_SETTINGS, type Account } from './users-fixtures.js';

interface ListedUser {
  id: string;
  name: string;
}

const BAD_REQUEST = { statusCode: 400, message: 'Bad Request', error: 'Bad Request' };

let server: TestServer;
let admin: Account;
let plain: Account;
beforeAll(async () => {
  server = await startServer();
  admin = await bootstrapAdmin(server);
  plain = await createAccount(server, admin, 'plain');
});
afterAll(() => server?.close());

/** The target of a `Link` header's `rel="next"` (RFC 8288), or undefined when there is none. */
function nextLink(response: { headers: Headers }): string | undefined {
  const link = response.headers.get('link');
  if (link === null) return undefined;
  const match = /^<([^>]+)>;\s*rel="next"$/.exec(link);
  if (!match?.[1]) throw new Error(`unexpected Link header: ${link}`);
  return match[1];
}

/** Follows `rel="next"` from `first` to the last page, running `betweenPages` before each next page; answers every user listed, in order. */
async function walk(first: string, betweenPages: (page: number) => Promise<void> = async () => undefined): Promise<{ users: ListedUser[]; pages: number }> {
  const users: ListedUser[] = [];
  let path: string | undefined = first;
  let pages = 0;
  while (path !== undefined) {
    const response = await call(server, 'GET', path, { token: admin.token });
    expect(response.status).toBe(200);
    users.push(...(response.body as ListedUser[]));
    pages += 1;
    path = nextLink(response);
    if (path !== undefined) await betweenPages(pages);
  }
  return { users, pages };
}

/** Every user id in the table, in the listing's order, straight from the database. */
async function allIds(): Promise<string[]> {
  const rows = await server.app.db
    .knex('users')
    .select('id')
    .orderBy([{ column: 'created_at' }, { column: 'id' }]);
  return rows.map((row: { id: string }) => row.id);
}

/**
 * Adds `count` users in one INSERT, shaped exactly like the server's rows (the hash and settings of a
 * user the server wrote); one statement gives them one `created_at`, so their order is the id alone.
 */
async function insertUsersAtOnce(prefix: string, count: number): Promise<void> {
  const template = await server.app.db.knex('users').where({ id: plain.id }).first();
  const rows = Array.from({ length: count }, (_, index) => ({
    name: `${prefix}-${index}`,
    name_folded: foldUserName(`${prefix}-${index}`),
    password_hash: template.password_hash,
    is_admin: false,
    onboarding_done: false,
    profile_picture: '',
    settings: JSON.stringify(DEFAULT_SETTINGS),
  }));
  await server.app.db.knex('users').insert(rows);
}

describe('GET /api/users pages', () => {
  test('the Link header walks every user exactly once, in creation order, also while users are added between pages', async () => {
    for (let index = 0; index < 6; index += 1) await createAccount(server, admin, `walker-${index}`);
    await insertUsersAtOnce('same-instant', 7);
    const before = await allIds();
    let added = 0;
    const { users, pages } = await walk('/api/users?limit=4', async (page) => {
      if (page % 2 === 1) {
        await createAccount(server, admin, `late-${page}`);
        added += 1;
      }
    });
    const seen = users.map((user) => user.id);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(await allIds());
    expect(seen.slice(0, before.length)).toEqual(before);
    expect(added).toBeGreaterThan(1);
    expect(seen.length).toBe(before.length + added);
    expect(pages).toBe(Math.ceil(seen.length / 4));
  });

  test('the last page has no Link header, and a page that ends exactly at the last user has none either', async () => {
    const total = (await allIds()).length;
    const whole = await call(server, 'GET', `/api/users?limit=${total}`, { token: admin.token });
    expect(whole.body).toHaveLength(total);
    expect(whole.headers.get('link')).toBeNull();
    const short = await call(server, 'GET', `/api/users?limit=${total - 1}`, { token: admin.token });
    expect(short.body).toHaveLength(total - 1);
    const last = await call(server, 'GET', nextLink(short) ?? 'missing', { token: admin.token });
    expect(last.body).toHaveLength(1);
    expect(last.headers.get('link')).toBeNull();
  });

  test('without limit a page holds 100 users and links the next with limit=100; limit=1000 is the largest page', async () => {
    const missing = 130 - (await allIds()).length;
    if (missing > 0) await insertUsersAtOnce('bulk', missing);
    const first = await call(server, 'GET', '/api/users', { token: admin.token });
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(100);
    expect(nextLink(first)).toMatch(/^\/api\/users\?limit=100&after=[A-Za-z0-9_-]+$/);
    const { users } = await walk('/api/users');
    expect(users.map((user) => user.id)).toEqual(await allIds());
    const largest = await call(server, 'GET', '/api/users?limit=1000', { token: admin.token });
    expect(largest.body).toHaveLength((await allIds()).length);
  });

  test.each([
    ['limit=0', '?limit=0', 'limit'],
    ['limit=1001', '?limit=1001', 'limit'],
    ['limit=-5', '?limit=-5', 'limit'],
    ['limit=ten', '?limit=ten', 'limit'],
    ['an after that is not base64url', '?after=not%20a%20cursor', 'after'],
    ['an after that decodes to something else', `?after=${Buffer.from('hello').toString('base64url')}`, 'after'],
    ['an after with a non-UUID id', `?after=${Buffer.from('1764170400000000_not-a-uuid').toString('base64url')}`, 'after'],
    ['an after beyond any timestamp', `?after=${Buffer.from('99999999999999999_5f0c1d2e-3b4a-4c5d-8e9f-0a1b2c3d4e5f').toString('base64url')}`, 'after'],
    ['an after with padding', `?after=${Buffer.from('1764170400000000_5f0c1d2e-3b4a-4c5d-8e9f-0a1b2c3d4e5f').toString('base64')}`, 'after'],
  ])('%s answers 400 in the API error shape naming the parameter', async (_case, query, field) => {
    const response = await call(server, 'GET', `/api/users${query}`, { token: admin.token });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject(BAD_REQUEST);
    expect(response.body.details.map((entry: { field: string }) => entry.field)).toEqual([field]);
  });

  test('a cursor issued for one page size pages as well with another', async () => {
    const first = await call(server, 'GET', '/api/users?limit=3', { token: admin.token });
    const after = new URL(nextLink(first) ?? 'missing', server.url).searchParams.get('after');
    const next = await call(server, 'GET', `/api/users?limit=5&after=${after}`, { token: admin.token });
    expect(next.body.map((user: ListedUser) => user.id)).toEqual((await allIds()).slice(3, 8));
  });

  test('a non-admin is refused with 403 whatever the page', async () => {
    const response = await call(server, 'GET', '/api/users?limit=2', { token: plain.token });
    expect(response.status).toBe(403);
  });

  test('a page stops early when its users would exceed 8 MiB, and the walk still reaches every user', async () => {
    const template = await server.app.db.knex('users').where({ id: plain.id }).first();
    // Eight of the largest pictures the contract allows (1,400,000 characters): 11 MB in all.
    const picture = `data:image/webp;base64,${'A'.repeat(1_400_000 - 23)}`;
    await server.app.db.knex('users').insert(
      Array.from({ length: 8 }, (_, index) => ({
        name: `pictured-${index}`,
        name_folded: `pictured-${index}`,
        password_hash: template.password_hash,
        profile_picture: picture,
        settings: JSON.stringify(DEFAULT_SETTINGS),
      })),
    );
    const sizes: number[] = [];
    const users: ListedUser[] = [];
    let path: string | undefined = '/api/users?limit=1000';
    while (path !== undefined) {
      const response = await call(server, 'GET', path, { token: admin.token });
      sizes.push(Buffer.byteLength(response.text));
      users.push(...(response.body as ListedUser[]));
      path = nextLink(response);
    }
    expect(users.map((user) => user.id)).toEqual(await allIds());
    expect(sizes.length).toBe(2);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(8.5 * 1024 * 1024);
  });

  test('the listing statements never read password hashes', async () => {
    const statements: string[] = [];
    const record = (query: { sql: string }): void => {
      statements.push(query.sql);
    };
    server.app.db.knex.on('query', record);
    try {
      const response = await call(server, 'GET', '/api/users?limit=5', { token: admin.token });
      expect(response.status).toBe(200);
    } finally {
      server.app.db.knex.off('query', record);
    }
    const listing = statements.filter((sql) => /order by "created_at"/i.test(sql));
    expect(listing).toHaveLength(2);
    for (const sql of listing) expect(sql).not.toMatch(/password/);
  });
});
