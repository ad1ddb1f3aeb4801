import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startServer, type TestServer } from '../../support/app.js';
import { openDatabase } from '../../../src/store/database.js';
import { createActors, login, SUPERUSER, type Actors } from './support.js';
import { budget } from '../../support/budget.js';

let server: TestServer;
let actors: Actors;

beforeAll(async () => {
  server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
  actors = await createActors(server);
});
afterAll(() => server?.close());

describe('writers', () => {
  test('SUPERUSER_EMAIL and SUPERUSER_PASSWORD create a superuser at start', async () => {
    const signedIn = await login(server, SUPERUSER.email, SUPERUSER.password);
    expect(signedIn.body.user).toMatchObject({ email: SUPERUSER.email, role: 'superuser' });
  });

  test('a new user is a writer unless a role is given, and has a profile image when given one', async () => {
    const created = await server.request('POST', '/v1/writers', {
      token: actors.tokens.superuser,
      body: { email: 'grace@example.com', password: 'password-123', name: 'Grace', profileImage: { url: 'https://cdn.example.com/g.png' } },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Grace', role: 'writer', email: 'grace@example.com', profileImage: { url: 'https://cdn.example.com/g.png' } });
  });

  test('email is unique regardless of case (409)', async () => {
    const response = await server.request('POST', '/v1/writers', {
      token: actors.tokens.superuser,
      body: { email: 'WRITER@Example.com', password: 'password-123', name: 'Dup' },
    });
    expect(response.status).toBe(409);
    expect(response.body).toMatchObject({ title: 'Conflict', status: 409 });
  });

  test('sign-in finds the email regardless of case', async () => {
    expect((await login(server, 'Writer@EXAMPLE.com', 'password-123')).status).toBe(200);
  });

  test.each([
    ['a wrong password', 'writer@example.com', 'wrong-password'],
    ['an unknown email', 'nobody@example.com', 'password-123'],
  ])('%s is the same 401 problem', async (_name, email, password) => {
    const response = await login(server, email, password);
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'Wrong email or password.' });
  });

  test('sign-in without a password is a 400 problem', async () => {
    const response = await server.request('POST', '/v1/writers/login', { body: { email: 'writer@example.com' } });
    expect(response.status).toBe(400);
    expect(response.body.errors).toEqual([{ field: 'password', message: "must have required property 'password'" }]);
  });

  test.each([
    ['an invalid email', { email: 'not-an-email', password: 'password-123', name: 'X' }, 'email'],
    ['a short password', { email: 'short@example.com', password: 'short', name: 'X' }, 'password'],
    ['a blank name', { email: 'blank@example.com', password: 'password-123', name: ' ' }, 'name'],
    ['an unknown role', { email: 'role@example.com', password: 'password-123', name: 'X', role: 'admin' }, 'role'],
  ])('%s is a 400 problem naming the field', async (_name, body, field) => {
    const response = await server.request('POST', '/v1/writers', { token: actors.tokens.superuser, body });
    expect(response.status).toBe(400);
    expect(response.body.errors.map((error: { field: string }) => error.field)).toContain(field);
  });

  test('no response ever carries a password or its hash', async () => {
    const responses = [
      await login(server, 'writer@example.com', 'password-123'),
      await server.request('GET', '/v1/writers', { token: actors.tokens.superuser }),
      await server.request('GET', `/v1/writers/${actors.ids.writer}`, { token: actors.tokens.superuser }),
    ];
    for (const response of responses) {
      expect(response.text).not.toMatch(/password|argon2/i);
    }
  });

  test('the stored password is an argon2id hash', async () => {
    const row = await server.app.db.knex('publishing_users').where({ id: actors.ids.writer }).first();
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
  });

  test.each([
    ['anonymous', undefined, false],
    ['another writer', 'otherWriter', false],
    ['an editor', 'editor', false],
    ['the user themself', 'writer', true],
    ['a superuser', 'superuser', true],
  ] as const)('the email is shown to %s: %s', async (_name, who, shown) => {
    const token = who ? actors.tokens[who] : undefined;
    const one = await server.request('GET', `/v1/writers/${actors.ids.writer}`, { token });
    expect('email' in one.body).toBe(shown);
    const list = await server.request('GET', '/v1/writers?limit=100', { token });
    const listed = list.body.items.find((item: { _id: string }) => item._id === actors.ids.writer);
    expect('email' in listed).toBe(shown);
  });

  test('readers are listed to superusers only; writers, editors and superusers to everyone, oldest first', async () => {
    const roles = async (token?: string) =>
      (await server.request('GET', '/v1/writers?limit=100', { token })).body.items.map((item: { role: string }) => item.role);
    expect(await roles()).not.toContain('reader');
    expect(await roles(actors.tokens.superuser)).toContain('reader');
    const everyone = await server.request('GET', '/v1/writers?limit=100');
    expect(everyone.body.items[0].role).toBe('superuser');
    const page = await server.request('GET', '/v1/writers?limit=1&offset=1');
    expect(page.body).toMatchObject({ limit: 1, offset: 1, total: everyone.body.total });
    expect(page.body.items[0]._id).toBe(everyone.body.items[1]._id);
  });
});

describe('topics', () => {
  test('a superuser creates a topic; everyone lists topics by title', async () => {
    for (const title of ['Zoology', 'astronomy']) {
      expect((await server.request('POST', '/v1/topics', { token: actors.tokens.superuser, body: { title } })).status).toBe(201);
    }
    const list = await server.request('GET', '/v1/topics');
    expect(list.body.items.map((topic: { title: string }) => topic.title)).toEqual(['astronomy', 'Zoology']);
    expect(list.body).toMatchObject({ total: 2, limit: 20, offset: 0 });
  });

  test('topic titles are unique regardless of case (409)', async () => {
    await server.request('POST', '/v1/topics', { token: actors.tokens.superuser, body: { title: 'Music' } });
    const duplicate = await server.request('POST', '/v1/topics', { token: actors.tokens.superuser, body: { title: 'MUSIC' } });
    expect(duplicate.status).toBe(409);
  });

  test('a blank topic title is a 400 problem', async () => {
    const response = await server.request('POST', '/v1/topics', { token: actors.tokens.superuser, body: { title: '  ' } });
    expect(response.status).toBe(400);
    expect(response.body.errors).toEqual([{ field: 'title', message: 'must not be blank' }]);
  });
});

describe('the create-superuser command', () => {
  const run = promisify(execFile);
  test(
    'creates a superuser in a PGlite data directory (or DATABASE_URL), once',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'publishing-cli-'));
      try {
        const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '', DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'silent' };
        delete env.DATABASE_URL;
        const args = ['--import', 'tsx', 'scripts/create-superuser.ts', '--email', 'Cli@Example.com', '--password', 'cli-password-1'];
        const first = await run(process.execPath, args, { env });
        expect(first.stdout).toContain('created superuser Cli@Example.com');
        const second = await run(process.execPath, args, { env }).catch((error: { code: number; stdout: string }) => error);
        expect(second).toMatchObject({ code: 1 });
        const db = await openDatabase({ dataDir: join(dir, 'data') });
        const row = await db.knex('publishing_users').where({ email: 'Cli@Example.com' }).first();
        await db.close();
        expect(row.role).toBe('superuser');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    budget(20_000),
  );
});
