import { randomUUID } from 'node:crypto';
import { foldUserName } from '../../../src/auth/user-name.js';
import { startServer, type TestServer } from '../../support/app.js';
import { bootstrapAdmin, call, createAccount, CUSTOM_SETTINGS, DEFAULT_SETTINGS, signIn, type Account } from './users-fixtures.js';

const NOT_FOUND = { statusCode: 404, message: 'Not Found', error: 'Not Found' };
const CONFLICT = { statusCode: 409, message: 'Conflict', error: 'Conflict' };

let server: TestServer;
let admin: Account;
beforeAll(async () => {
  server = await startServer();
  admin = await bootstrapAdmin(server);
});
afterAll(() => server?.close());

describe('POST /api/users', () => {
  test('answers 200 with default settings, profilePicture "" and onboardingDone false', async () => {
    const response = await call(server, 'POST', '/api/users', { token: admin.token, body: { name: 'carol', password: 'carol-password', isAdmin: false } });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'carol',
      isAdmin: false,
      onboardingDone: false,
      profilePicture: '',
      settings: DEFAULT_SETTINGS,
    });
  });

  test('keeps a given profilePicture and can create admins', async () => {
    const response = await call(server, 'POST', '/api/users', {
      token: admin.token,
      body: { name: 'dave', password: 'dave-password', isAdmin: true, profilePicture: 'https://example.com/d.png' },
    });
    expect(response.body).toMatchObject({ isAdmin: true, profilePicture: 'https://example.com/d.png' });
  });

  test.each([
    ['a missing name', { password: 'long-enough', isAdmin: false }, ['name']],
    ['an empty name', { name: '', password: 'long-enough', isAdmin: false }, ['name']],
    ['a blank name', { name: '   ', password: 'long-enough', isAdmin: false }, ['name']],
    ['a short password', { name: 'x', password: 'short', isAdmin: false }, ['password']],
    ['a wrong-typed isAdmin', { name: 'x', password: 'long-enough', isAdmin: 'yes' }, ['isAdmin']],
    ['a missing isAdmin and a numeric name', { name: 42, password: 'long-enough' }, ['name', 'isAdmin']],
    ['an unknown field', { name: 'x', password: 'long-enough', isAdmin: false, role: 'root' }, ['role']],
  ])('with %s answers 400 with details naming each violation', async (_case, body, fields) => {
    const response = await call(server, 'POST', '/api/users', { token: admin.token, body });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ statusCode: 400, message: 'Bad Request', error: 'Bad Request' });
    expect([...new Set(response.body.details.map((entry: { field: string }) => entry.field))].sort()).toEqual([...fields].sort());
    for (const entry of response.body.details) expect(typeof entry.message).toBe('string');
  });

  test('a duplicate name answers 409', async () => {
    const response = await call(server, 'POST', '/api/users', { token: admin.token, body: { name: 'carol', password: 'other-password', isAdmin: false } });
    expect(response.status).toBe(409);
    expect(response.body).toEqual(expect.objectContaining(CONFLICT));
  });

  // One folding rule (src/auth/user-name.ts) on both sides: the database compares the fold stored with
  // each name, so a taken name with spaces PostgreSQL's btrim would not trim (tab, line feed, BOM) still
  // blocks its plain spelling, as the sign-in throttle counts them as one.
  test.each([
    ['a trailing tab', 'fold-tab\t', 'Fold-Tab'],
    ['NBSPs around it', '\u00a0fold-nbsp\u00a0', 'fold-nbsp'],
    ['an ideographic space and full-width letters', '\u3000ＦＯＬＤ-wide', 'fold-wide'],
    ['a byte-order mark', '\ufeffFold-bom', 'fold-bom'],
    ['an em space and a line feed', '\u2003fold-lf\n', 'fold-lf'],
  ])('a taken name with %s blocks the same name folded (409)', async (_case, taken, plain) => {
    expect(foldUserName(taken)).toBe(foldUserName(plain));
    const first = await call(server, 'POST', '/api/users', { token: admin.token, body: { name: taken, password: 'folding-password', isAdmin: false } });
    expect(first.status).toBe(200);
    const response = await call(server, 'POST', '/api/users', { token: admin.token, body: { name: plain, password: 'other-password', isAdmin: false } });
    expect(response.status).toBe(409);
    expect(response.body).toEqual(expect.objectContaining(CONFLICT));
  });

  // The same Unicode names through the JavaScript side (foldUserName) and the SQL side (the stored
  // users.name_folded the database compares): the column holds exactly the JavaScript fold, and
  // every path that looks a name up (creation, rename) agrees with it, for names folding together
  // and for names that must stay apart.
  test.each([
    ['a no-break space', '\u00a0uni-nbsp', 'uni-nbsp', true],
    ['an ideographic space', 'uni-ideo\u3000', 'UNI-IDEO', true],
    ['a combining acute accent (NFKC composes it)', 'uni-cafe\u0301', 'uni-caf\u00e9', true],
    ['full-width letters', '\uff35\uff2e\uff29-wide', 'uni-wide', true],
    ['a Turkish dotted capital I (lower-cases to i and a combining dot)', '\u0130stanbul-uni', 'i\u0307stanbul-uni', true],
    ['a capital sharp s', 'uni-stra\u1e9ee', 'UNI-STRA\u00dfE', true],
    ['a zero-width space, which is no white space', 'uni\u200bzw', 'unizw', false],
    ['a dotless i against the dotted one', 'uni-d\u0131m', 'uni-dim', false],
    ['a sharp s against ss (no full case folding)', 'uni-gro\u00df', 'uni-gross', false],
  ])('a name with %s: the stored fold is the JavaScript fold, creation and rename agree with it', async (_case, taken, other, same) => {
    expect(foldUserName(taken) === foldUserName(other)).toBe(same);
    const created = await call(server, 'POST', '/api/users', { token: admin.token, body: { name: taken, password: 'folding-password', isAdmin: false } });
    expect(created.status).toBe(200);
    const row = await server.app.db.knex('users').where({ id: created.body.id }).first();
    expect(row).toMatchObject({ name: taken, name_folded: foldUserName(taken) });
    const helper = await call(server, 'POST', '/api/users', {
      token: admin.token,
      body: { name: `helper-${randomUUID()}`, password: 'folding-password', isAdmin: false },
    });
    const renamed = await call(server, 'PUT', `/api/users/${helper.body.id}`, { token: admin.token, body: { name: other } });
    expect(renamed.status).toBe(same ? 409 : 200);
    if (same) {
      const again = await call(server, 'POST', '/api/users', { token: admin.token, body: { name: other, password: 'other-password', isAdmin: false } });
      expect(again.status).toBe(409);
    } else {
      const stored = await server.app.db.knex('users').where({ id: helper.body.id }).first();
      expect(stored).toMatchObject({ name: other, name_folded: foldUserName(other) });
    }
  });

  test('concurrent creations of one name give one 200 and 409s, never a 500', async () => {
    const responses = await Promise.all(
      [1, 2, 3].map(() => call(server, 'POST', '/api/users', { token: admin.token, body: { name: 'racer', password: 'racer-password', isAdmin: false } })),
    );
    expect(responses.map((response) => response.status).sort()).toEqual([200, 409, 409]);
  });
});

describe('GET /api/users and GET /api/users/{id}', () => {
  test('an admin lists every user, oldest first', async () => {
    const response = await call(server, 'GET', '/api/users', { token: admin.token });
    expect(response.status).toBe(200);
    expect(response.body[0]).toMatchObject({ id: admin.id, name: 'root', isAdmin: true });
    expect(response.body.map((user: { name: string }) => user.name)).toEqual(expect.arrayContaining(['root', 'carol', 'dave']));
  });

  test.each([
    ['an unknown UUID', () => randomUUID()],
    ['a non-UUID id', () => 'not-a-uuid'],
    ['a very long id', () => 'x'.repeat(500)],
    ['an id with SQL in it', () => encodeURIComponent("' OR 1=1 --")],
  ])('%s answers 404 on GET, PUT and DELETE, never 500', async (_case, id) => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const response = await call(server, method, `/api/users/${id()}`, { token: admin.token, body: method === 'PUT' ? { onboardingDone: true } : undefined });
      expect([method, response.status, response.body]).toEqual([method, 404, NOT_FOUND]);
    }
  });
});

describe('PUT /api/users/{id}', () => {
  let erin: Account;
  beforeAll(async () => {
    erin = await createAccount(server, admin, 'erin');
  });

  const read = async (id: string) => (await call(server, 'GET', `/api/users/${id}`, { token: admin.token })).body;

  test('applies exactly the fields present and leaves the rest', async () => {
    const before = await read(erin.id);
    const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { profilePicture: 'https://example.com/e.png' } });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...before, profilePicture: 'https://example.com/e.png' });
    expect(await read(erin.id)).toEqual(response.body);
  });

  test('an empty body changes nothing', async () => {
    const before = await read(erin.id);
    const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: {} });
    expect(response.status).toBe(200);
    expect(response.body).toEqual(before);
  });

  test('settings replace the whole object', async () => {
    const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { settings: CUSTOM_SETTINGS } });
    expect(response.body.settings).toEqual(CUSTOM_SETTINGS);
    expect((await read(erin.id)).settings).toEqual(CUSTOM_SETTINGS);
  });

  test.each([
    [
      'a missing top-level key',
      (() => {
        const { language: _language, ...rest } = DEFAULT_SETTINGS;
        return rest;
      })(),
      'settings.language',
    ],
    ['an incomplete integration', { ...DEFAULT_SETTINGS, mediaserver: { apiKey: '', baseUrl: '' } }, 'settings.mediaserver.userId'],
    ['a wrong-typed field', { ...DEFAULT_SETTINGS, animationDuration: 'slow' }, 'settings.animationDuration'],
    ['an unknown key', { ...DEFAULT_SETTINGS, theme: 'dark' }, 'settings.theme'],
  ])('settings with %s answer 400 and change nothing', async (_case, settings, field) => {
    const before = await read(erin.id);
    const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { settings } });
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([expect.objectContaining({ field })]);
    expect(await read(erin.id)).toEqual(before);
  });

  test('onboardingDone can be set and set back to false', async () => {
    expect((await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { onboardingDone: true } })).body.onboardingDone).toBe(true);
    expect((await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { onboardingDone: false } })).body.onboardingDone).toBe(false);
  });

  test('renaming to a taken name answers 409 and renaming to a free one works', async () => {
    const taken = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { name: 'carol' } });
    expect(taken.status).toBe(409);
    expect(taken.body).toEqual(expect.objectContaining(CONFLICT));
    const renamed = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { name: 'erin-2' } });
    expect(renamed.body.name).toBe('erin-2');
    const same = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { name: 'erin-2' } });
    expect(same.status).toBe(200);
    await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { name: 'erin' } });
  });

  test('a plain user cannot change isAdmin, not even their own: 403, nothing changes', async () => {
    const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { isAdmin: true, onboardingDone: true } });
    expect(response.status).toBe(403);
    expect(response.body).toEqual({ statusCode: 403, message: 'Forbidden', error: 'Forbidden' });
    expect(await read(erin.id)).toMatchObject({ isAdmin: false, onboardingDone: false });
  });

  test("sending one's current isAdmin value is not a change and is allowed", async () => {
    expect((await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { isAdmin: false } })).status).toBe(200);
  });

  test('an admin promotes and demotes another user', async () => {
    expect((await call(server, 'PUT', `/api/users/${erin.id}`, { token: admin.token, body: { isAdmin: true } })).body.isAdmin).toBe(true);
    expect((await call(server, 'PUT', `/api/users/${erin.id}`, { token: admin.token, body: { isAdmin: false } })).body.isAdmin).toBe(false);
  });

  describe('passwords', () => {
    test.each([
      ['without oldPassword', { password: 'erin-new-password' }],
      ['with a wrong oldPassword', { password: 'erin-new-password', oldPassword: 'not-the-password' }],
    ])('changing one\'s own password %s answers 400 "Password mismatch" and keeps the old one', async (_case, body) => {
      const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ statusCode: 400, message: 'Password mismatch', error: 'Bad Request' });
      expect(response.body.details).toEqual([{ field: 'oldPassword', message: 'Password mismatch' }]);
      await signIn(server, 'erin', 'erin-password');
    });

    test('with the right oldPassword the new password works and the old one stops working', async () => {
      const response = await call(server, 'PUT', `/api/users/${erin.id}`, {
        token: erin.token,
        body: { password: 'erin-new-password', oldPassword: 'erin-password' },
      });
      expect(response.status).toBe(200);
      await signIn(server, 'erin', 'erin-new-password');
      expect((await call(server, 'POST', '/api/auth', { body: { name: 'erin', password: 'erin-password' } })).status).toBe(401);
    });

    test("an admin sets another user's password without oldPassword", async () => {
      const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: admin.token, body: { password: 'erin-third-password' } });
      expect(response.status).toBe(200);
      await signIn(server, 'erin', 'erin-third-password');
    });

    test('an admin changing their own password needs oldPassword too', async () => {
      const response = await call(server, 'PUT', `/api/users/${admin.id}`, { token: admin.token, body: { password: 'root-new-password' } });
      expect(response.status).toBe(400);
      expect(response.body.message).toBe('Password mismatch');
    });

    test('a new password shorter than 8 characters answers 400', async () => {
      const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: admin.token, body: { password: 'short' } });
      expect(response.status).toBe(400);
      expect(response.body.details).toEqual([expect.objectContaining({ field: 'password' })]);
    });
  });

  describe('the representation sent back (issue 19: clients save the whole user)', () => {
    test('the UserDto the server answered is accepted back as is, changing nothing', async () => {
      const before = await read(erin.id);
      const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: before });
      expect(response.status).toBe(200);
      expect(response.body).toEqual(before);
    });

    test('the id may be spelt in upper case like any UUID', async () => {
      const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { id: erin.id.toUpperCase(), onboardingDone: true } });
      expect(response.status).toBe(200);
    });

    test.each([
      ['another user', () => admin.id],
      ['an unknown id', () => randomUUID()],
      ['an empty id', () => ''],
    ])('an id naming %s answers 400 naming id and changes nothing', async (_case, id) => {
      const before = await read(erin.id);
      const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { ...before, id: id(), name: 'erin-elsewhere' } });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ statusCode: 400, message: 'Bad Request', error: 'Bad Request' });
      expect(response.body.details).toEqual([expect.objectContaining({ field: 'id' })]);
      expect(await read(erin.id)).toEqual(before);
    });

    test.each([
      ['with an empty oldPassword', { password: '', oldPassword: '' }],
      ['without oldPassword', { password: '' }],
    ])('an empty password %s keeps the password, from the user and from an admin', async (_case, body) => {
      for (const token of [erin.token, admin.token]) {
        const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token, body: { ...body, onboardingDone: false } });
        expect(response.status).toBe(200);
      }
      await signIn(server, 'erin', 'erin-third-password');
    });

    test('an empty password with a non-empty oldPassword answers 400 naming password, not "unchanged"', async () => {
      const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: erin.token, body: { password: '', oldPassword: 'erin-third-password' } });
      expect(response.status).toBe(400);
      expect(response.body.details).toEqual([expect.objectContaining({ field: 'password' })]);
      await signIn(server, 'erin', 'erin-third-password');
    });

    test('a short password counts characters, not bytes: seven emoji are too few', async () => {
      const response = await call(server, 'PUT', `/api/users/${erin.id}`, { token: admin.token, body: { password: '🔑'.repeat(7) } });
      expect(response.status).toBe(400);
      expect(response.body.details).toEqual([{ field: 'password', message: 'must NOT have fewer than 8 characters' }]);
    });
  });
});

describe('the last admin', () => {
  test('cannot be demoted (409) while another admin can, and the survivor cannot be deleted (409)', async () => {
    // dave was created as an admin above; demote him so root is the last admin.
    const users = (await call(server, 'GET', '/api/users', { token: admin.token })).body as Array<{ id: string; name: string; isAdmin: boolean }>;
    for (const user of users.filter((entry) => entry.isAdmin && entry.id !== admin.id)) {
      expect((await call(server, 'PUT', `/api/users/${user.id}`, { token: admin.token, body: { isAdmin: false } })).status).toBe(200);
    }
    const demote = await call(server, 'PUT', `/api/users/${admin.id}`, { token: admin.token, body: { isAdmin: false } });
    expect(demote.status).toBe(409);
    expect(demote.body).toEqual(expect.objectContaining(CONFLICT));
    const remove = await call(server, 'DELETE', `/api/users/${admin.id}`, { token: admin.token });
    expect(remove.status).toBe(409);
    expect(remove.body).toEqual(expect.objectContaining(CONFLICT));
    expect((await call(server, 'GET', `/api/users/${admin.id}`, { token: admin.token })).body.isAdmin).toBe(true);
  });

  test('two admins demoting each other at once leave one admin, never zero', async () => {
    const second = await createAccount(server, admin, 'second-admin', { isAdmin: true });
    const [a, b] = await Promise.all([
      call(server, 'PUT', `/api/users/${second.id}`, { token: admin.token, body: { isAdmin: false } }),
      call(server, 'PUT', `/api/users/${admin.id}`, { token: second.token, body: { isAdmin: false } }),
    ]);
    // The loser answers 409 (it saw itself as the last admin) or 404 (it was demoted first and can no
    // longer see the other admin); what matters is that exactly one admin is left.
    expect(a.status === 200 ? [409, 404] : [200]).toContain(b.status);
    expect(b.status === 200 ? [409, 404] : [200]).toContain(a.status);
    const admins = (await call(server, 'GET', '/api/users', { token: a.status === 200 ? admin.token : second.token })).body.filter(
      (user: { isAdmin: boolean }) => user.isAdmin,
    );
    expect(admins).toHaveLength(1);
    // Restore: root is the only admin again.
    if (b.status === 200) {
      await call(server, 'PUT', `/api/users/${admin.id}`, { token: second.token, body: { isAdmin: true } });
      await call(server, 'PUT', `/api/users/${second.id}`, { token: admin.token, body: { isAdmin: false } });
    }
  });
});

describe('DELETE /api/users/{id}', () => {
  test('answers 200 with an empty body, and the user is gone', async () => {
    const frank = await createAccount(server, admin, 'frank');
    const response = await call(server, 'DELETE', `/api/users/${frank.id}`, { token: admin.token });
    expect(response.status).toBe(200);
    expect(response.text).toBe('');
    expect(response.headers.get('content-length')).toBe('0');
    expect((await call(server, 'GET', `/api/users/${frank.id}`, { token: admin.token })).status).toBe(404);
    expect((await call(server, 'POST', '/api/auth', { body: { name: 'frank', password: 'frank-password' } })).status).toBe(401);
  });

  test('a user may delete themself, and the name is free again', async () => {
    const gina = await createAccount(server, admin, 'gina');
    expect((await call(server, 'DELETE', `/api/users/${gina.id}`, { token: gina.token })).status).toBe(200);
    await createAccount(server, admin, 'gina');
  });
});

describe('malformed requests answer the documented error shape', () => {
  test.each([
    ['malformed JSON', { rawBody: '{"name": ', headers: { 'content-type': 'application/json' } }, 'body'],
    ['a body that is not JSON', { rawBody: 'name=x&password=y', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 'body'],
    ['a JSON array', { body: [1, 2] }, 'body'],
    ['no body at all', {}, 'body'],
  ])('%s → 400', async (_case, options, field) => {
    const response = await call(server, 'POST', '/api/users', { token: admin.token, ...options });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.body).toMatchObject({ statusCode: 400, message: 'Bad Request', error: 'Bad Request' });
    expect(response.body.details[0].field).toBe(field);
  });

  test.each([
    ['an unknown route under /api', 'GET', '/api/nothing-here'],
    ['an unknown route outside /api', 'GET', '/nothing-here'],
    ['a method the path does not have', 'PATCH', '/api/users'],
    ['POST on a read-only path', 'POST', '/api'],
  ])('%s → 404 (as the original NestJS service answers)', async (_case, method, path) => {
    const response = await call(server, method, path, { token: admin.token, unchecked: true });
    expect(response.status).toBe(404);
    expect(response.body).toEqual(NOT_FOUND);
  });

  test('every response carries an x-request-id, echoing a sane one the client sent', async () => {
    const response = await call(server, 'GET', '/api', { headers: { 'x-request-id': 'trace-123' } });
    expect(response.headers.get('x-request-id')).toBe('trace-123');
  });
});
