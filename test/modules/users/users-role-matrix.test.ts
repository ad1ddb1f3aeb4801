import { startServer, type TestServer } from '../../support/app.js';
import { bootstrapAdmin, call, createAccount, type Account } from './users-fixtures.js';

/**
 * Who may do what: every endpoint × every kind of caller, against a fresh plain user ("subject").
 * 401 = no credentials; 403 = signed in without the right; 404 = the target is not visible.
 */
type Caller = 'anonymous' | 'self' | 'other user' | 'admin';
interface Row {
  method: string;
  path: (subject: Account, admin: Account) => string;
  body?: (n: number) => unknown;
  want: Record<Caller, number>;
  /** The case changes the subject for good (deletes or promotes it): give it its own. */
  fresh?: boolean;
}

const ROWS: Array<[string, Row]> = [
  ['GET /api', { method: 'GET', path: () => '/api', want: { anonymous: 200, self: 200, 'other user': 200, admin: 200 } }],
  ['GET /api/users', { method: 'GET', path: () => '/api/users', want: { anonymous: 401, self: 403, 'other user': 403, admin: 200 } }],
  [
    'POST /api/users',
    {
      method: 'POST',
      path: () => '/api/users',
      body: (n) => ({ name: `created-${n}`, password: 'created-password', isAdmin: false }),
      want: { anonymous: 401, self: 403, 'other user': 403, admin: 200 },
    },
  ],
  ['GET /api/users/{subject}', { method: 'GET', path: (s) => `/api/users/${s.id}`, want: { anonymous: 401, self: 200, 'other user': 404, admin: 200 } }],
  ['GET /api/users/{admin}', { method: 'GET', path: (_s, a) => `/api/users/${a.id}`, want: { anonymous: 401, self: 404, 'other user': 404, admin: 200 } }],
  [
    'PUT /api/users/{subject} (profile fields)',
    {
      method: 'PUT',
      path: (s) => `/api/users/${s.id}`,
      body: () => ({ onboardingDone: true }),
      want: { anonymous: 401, self: 200, 'other user': 404, admin: 200 },
    },
  ],
  [
    'PUT /api/users/{subject} (isAdmin)',
    {
      method: 'PUT',
      path: (s) => `/api/users/${s.id}`,
      body: () => ({ isAdmin: true }),
      want: { anonymous: 401, self: 403, 'other user': 404, admin: 200 },
      fresh: true,
    },
  ],
  [
    'PUT /api/users/{admin} (profile fields)',
    {
      method: 'PUT',
      path: (_s, a) => `/api/users/${a.id}`,
      body: () => ({ onboardingDone: true }),
      want: { anonymous: 401, self: 404, 'other user': 404, admin: 200 },
    },
  ],
  [
    'DELETE /api/users/{subject}',
    { method: 'DELETE', path: (s) => `/api/users/${s.id}`, want: { anonymous: 401, self: 200, 'other user': 404, admin: 200 }, fresh: true },
  ],
  [
    'DELETE /api/users/{admin} (the last admin)',
    { method: 'DELETE', path: (_s, a) => `/api/users/${a.id}`, want: { anonymous: 401, self: 404, 'other user': 404, admin: 409 } },
  ],
];

const CALLERS: Caller[] = ['anonymous', 'self', 'other user', 'admin'];
const CASES = ROWS.flatMap(([endpoint, row]) => CALLERS.map((caller) => [endpoint, caller, row.want[caller], row] as const));

let server: TestServer;
let admin: Account;
let other: Account;
let shared: Account;
let counter = 0;
beforeAll(async () => {
  server = await startServer();
  admin = await bootstrapAdmin(server);
  other = await createAccount(server, admin, 'other');
  shared = await createAccount(server, admin, 'subject');
});
afterAll(() => server?.close());

test.each(CASES)('%s as %s → %i', async (_endpoint, caller, want, row) => {
  counter += 1;
  const subject = row.fresh ? await createAccount(server, admin, `subject-${counter}`) : shared;
  const token = { anonymous: undefined, self: subject.token, 'other user': other.token, admin: admin.token }[caller];
  const response = await call(server, row.method, row.path(subject, admin), { token, body: row.body?.(counter) });
  expect(response.status).toBe(want);
  if (want >= 400) expect(response.body.statusCode).toBe(want);
  if (want === 401) expect(response.body).toEqual({ statusCode: 401, message: 'Unauthorized' });
  if (row.fresh) {
    // Leave the store as it was: root the only admin, no subject left behind.
    const cleanup = await call(server, 'DELETE', `/api/users/${subject.id}`, { token: admin.token });
    expect([200, 404]).toContain(cleanup.status);
  }
});
