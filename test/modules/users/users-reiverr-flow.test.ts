/**
 * The original front end of this API, reiverr, replayed request for request (issue 19 §1).
 *
 * Source: github.com/aleksilassila/reiverr at tag v2.0.0-alpha.6 (commit 982be33c67acf16c364cf36f424ce797c40997f5).
 * At that tag the front end is the repository's root `src/` (later releases moved it to `frontend/src`);
 * every path below is relative to the repository root at that commit. The request shapes are copied
 * as data: method, path, headers and the body each call builds, with the front end's own names where
 * it spreads the user it last received (`{...user, onboardingDone: true}`). Its settings keys
 * (`sonarr`, `radarr`, `jellyfin`, `tmdb`) are this seed's `seriesmanager`, `moviemanager`,
 * `mediaserver`, `metadatadb` (docs/users-api.md); nothing else is renamed.
 *
 * Each step runs after the one before it, on the state the front end would hold: the user record a
 * PUT answers replaces the one it keeps (src/lib/stores/user.store.ts: `userStore.set(update)`).
 */
import { startServer, type TestServer } from '../../support/app.js';
import { call } from './users-fixtures.js';

type User = Record<string, unknown> & { id: string; settings: Record<string, Record<string, unknown>> };

interface Session {
  id: string;
  token: string;
}

/**
 * What each front-end call sends. `user` is the record the front end holds (the last one the server
 * answered), spread into the body as the front end spreads it.
 */
const FRONT_END = {
  /** src/lib/stores/session.store.ts `addSession` (from src/lib/components/Login.svelte `handleLogin`): axios POST, JSON body. */
  signIn: (name: string, password: string) => ({ method: 'POST', path: '/api/auth', body: { name, password } }),
  /** src/lib/stores/user.store.ts: axios GET of `/api/users/` + the session's id, with the session's bearer token. */
  readUser: (session: Session) => ({ method: 'GET', path: `/api/users/${session.id}` }),
  /** src/lib/pages/OnboardingPage.svelte `finalizeSetup` → src/lib/stores/user.store.ts `updateUser` → src/lib/apis/reiverr/reiverr-api.ts `updateUser` (PUT /users/{id}). */
  finishOnboarding: (user: User) => ({ method: 'PUT', path: `/api/users/${user.id}`, body: { ...user, onboardingDone: true } }),
  /** src/lib/components/Integrations/SonarrIntegration.svelte `handleSave` (`sonarr` there). */
  saveSeriesManager: (user: User, baseUrl: string, apiKey: string) => ({
    method: 'PUT',
    path: `/api/users/${user.id}`,
    body: { ...user, settings: { ...user.settings, seriesmanager: { ...user.settings.seriesmanager, baseUrl, apiKey } } },
  }),
  /** src/lib/components/Integrations/RadarrIntegration.svelte `handleSave` (`radarr` there). */
  saveMovieManager: (user: User, baseUrl: string, apiKey: string) => ({
    method: 'PUT',
    path: `/api/users/${user.id}`,
    body: { ...user, settings: { ...user.settings, moviemanager: { ...user.settings.moviemanager, baseUrl, apiKey } } },
  }),
  /** src/lib/components/Integrations/JellyfinIntegration.svelte `handleSave` (`jellyfin` there). */
  saveMediaServer: (user: User, baseUrl: string, apiKey: string, userId: string) => ({
    method: 'PUT',
    path: `/api/users/${user.id}`,
    body: { ...user, settings: { ...user.settings, mediaserver: { ...user.settings.mediaserver, baseUrl, apiKey, userId } } },
  }),
  /** src/lib/components/Integrations/TmdbIntegrationConnect.svelte `completeTMDBConnect` (`tmdb` there). */
  connectMetadataDb: (user: User, accountId: string, accessToken: string) => ({
    method: 'PUT',
    path: `/api/users/${user.id}`,
    body: { ...user, settings: { ...user.settings, metadatadb: { userId: accountId, sessionId: accessToken } } },
  }),
  /** src/lib/pages/ManagePage.svelte `getUsers` (admins) → src/lib/apis/reiverr/reiverr-api.ts `getUsers` (GET /users, no parameters). */
  listUsers: () => ({ method: 'GET', path: '/api/users' }),
  /** src/lib/components/Dialog/CreateOrEditProfileModal.svelte `create` → reiverr-api.ts `createUser` (POST /users). */
  createAccount: (name: string, newPassword: string, isAdmin: boolean, profilePicture: string) => ({
    method: 'POST',
    path: '/api/users',
    body: { name, password: newPassword, isAdmin, profilePicture },
  }),
  /**
   * src/lib/components/Dialog/CreateOrEditProfileModal.svelte `save`, editing oneself: the whole user
   * through user.store.ts `updateUser`, the password fields empty unless typed in.
   */
  saveOwnProfile: (user: User, form: { name: string; newPassword: string; oldPassword: string; profilePicture: string; isAdmin: boolean }) => ({
    method: 'PUT',
    path: `/api/users/${user.id}`,
    body: { ...user, name: form.name, password: form.newPassword, oldPassword: form.oldPassword, profilePicture: form.profilePicture, isAdmin: form.isAdmin },
  }),
  /** The same dialog's `save` for another user (an admin, from ManagePage.svelte): only the form's fields, straight to reiverr-api.ts `updateUser`. */
  saveOtherProfile: (id: string, form: { name: string; newPassword: string; oldPassword: string; profilePicture: string; isAdmin: boolean }) => ({
    method: 'PUT',
    path: `/api/users/${id}`,
    body: { name: form.name, password: form.newPassword, oldPassword: form.oldPassword, profilePicture: form.profilePicture, isAdmin: form.isAdmin },
  }),
  /** The same dialog's `handleDeleteAccount` → reiverr-api.ts `deleteUser` (DELETE /users/{id}). */
  deleteAccount: (id: string) => ({ method: 'DELETE', path: `/api/users/${id}` }),
};

/**
 * A picture as src/lib/profile-pictures.ts holds them (`data:image;base64,` + WebP), cut to its first
 * bytes: the real ones are ~70 KB each and add nothing here.
 */
const PROFILE_PICTURE = 'data:image;base64,UklGRuwPAQBXRUJQVlA4IOAPAQAwygOdASpYAoQDPlEkj0WjoiES2O2cOAUEs7bOUo19RmjmpqRc2+mjwJ96JH5f8B9r';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.close());

/** Sends one front-end request (contract-checked, no password in any answer) with the session's bearer token. */
function send(request: { method: string; path: string; body?: unknown }, session?: Session) {
  return call(server, request.method, request.path, { token: session?.token, body: request.body });
}

async function signIn(name: string, password: string): Promise<{ session: Session; user: User }> {
  const response = await send(FRONT_END.signIn(name, password));
  expect(response.status).toBe(200);
  // session.store.ts keeps `{id: res.data.user.id, token: res.data.accessToken}`.
  return { session: { id: response.body.user.id, token: response.body.accessToken }, user: response.body.user };
}

const ADMIN = { name: 'aleksi', password: 'first-run-password' };
const VIEWER = { name: 'viewer', password: 'viewer-password' };

describe('the reiverr v2.0.0-alpha.6 front end, request for request', () => {
  let admin: Session;
  let adminUser: User;
  let viewer: Session;
  let viewerUser: User;

  test('first run: the first sign-in creates the admin, who reads their own record', async () => {
    ({ session: admin } = await signIn(ADMIN.name, ADMIN.password));
    const read = await send(FRONT_END.readUser(admin), admin);
    expect(read.status).toBe(200);
    adminUser = read.body;
    expect(adminUser).toMatchObject({ id: admin.id, name: ADMIN.name, isAdmin: true, onboardingDone: false });
  });

  test('onboarding ends with the whole user sent back with onboardingDone: true', async () => {
    const response = await send(FRONT_END.finishOnboarding(adminUser), admin);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...adminUser, onboardingDone: true });
    adminUser = response.body;
  });

  test('each integration page saves the whole user with one settings object changed', async () => {
    const saves = [
      (user: User) => FRONT_END.saveSeriesManager(user, 'http://series.local:8989', 'key-0'),
      (user: User) => FRONT_END.saveMovieManager(user, 'http://movies.local:7878', 'key-1'),
      (user: User) => FRONT_END.saveMediaServer(user, 'http://media.local:8096', 'media-key', 'media-user-1'),
      (user: User) => FRONT_END.connectMetadataDb(user, 'account-42', 'access-token-42'),
    ];
    for (const save of saves) {
      const response = await send(save(adminUser), admin);
      expect(response.status).toBe(200);
      adminUser = response.body;
    }
    expect(adminUser.settings).toMatchObject({
      seriesmanager: { baseUrl: 'http://series.local:8989', apiKey: 'key-0', qualityProfileId: 0 },
      moviemanager: { baseUrl: 'http://movies.local:7878', apiKey: 'key-1' },
      mediaserver: { baseUrl: 'http://media.local:8096', apiKey: 'media-key', userId: 'media-user-1' },
      metadatadb: { userId: 'account-42', sessionId: 'access-token-42' },
    });
    const read = await send(FRONT_END.readUser(admin), admin);
    expect(read.body).toEqual(adminUser);
  });

  test('the admin creates an account from the manage page, and it appears in the user list', async () => {
    const created = await send(FRONT_END.createAccount(VIEWER.name, VIEWER.password, false, PROFILE_PICTURE), admin);
    expect(created.status).toBe(200);
    const list = await send(FRONT_END.listUsers(), admin);
    expect(list.status).toBe(200);
    expect(list.body.map((user: User) => user.name)).toEqual([ADMIN.name, VIEWER.name]);
    ({ session: viewer } = await signIn(VIEWER.name, VIEWER.password));
    viewerUser = (await send(FRONT_END.readUser(viewer), viewer)).body;
    expect(viewerUser).toMatchObject({ name: VIEWER.name, isAdmin: false, profilePicture: PROFILE_PICTURE });
  });

  test('saving one’s profile with both password fields empty changes the rest and keeps the password', async () => {
    const form = { name: 'viewer-renamed', newPassword: '', oldPassword: '', profilePicture: '', isAdmin: false };
    const response = await send(FRONT_END.saveOwnProfile(viewerUser, form), viewer);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...viewerUser, name: 'viewer-renamed', profilePicture: '' });
    viewerUser = response.body;
    await signIn('viewer-renamed', VIEWER.password);
  });

  test('a password change with the wrong old password answers 400 "Password mismatch" and keeps the old one', async () => {
    const form = { name: 'viewer-renamed', newPassword: 'viewer-new-password', oldPassword: 'not-my-password', profilePicture: '', isAdmin: false };
    const response = await send(FRONT_END.saveOwnProfile(viewerUser, form), viewer);
    expect(response.status).toBe(400);
    // The dialog shows `res.error.message` (reiverr-api.ts `updateUser`).
    expect(response.body).toMatchObject({ statusCode: 400, message: 'Password mismatch' });
    await signIn('viewer-renamed', VIEWER.password);
  });

  test('a password change with the right old password takes effect', async () => {
    const form = { name: 'viewer-renamed', newPassword: 'viewer-new-password', oldPassword: VIEWER.password, profilePicture: '', isAdmin: false };
    const response = await send(FRONT_END.saveOwnProfile(viewerUser, form), viewer);
    expect(response.status).toBe(200);
    viewerUser = response.body;
    await signIn('viewer-renamed', 'viewer-new-password');
    expect((await send(FRONT_END.signIn('viewer-renamed', VIEWER.password))).status).toBe(401);
  });

  test('the admin edits another user: form fields only, empty passwords keep theirs, a typed one replaces it', async () => {
    const unchanged = { name: 'viewer-by-admin', newPassword: '', oldPassword: '', profilePicture: PROFILE_PICTURE, isAdmin: false };
    const renamed = await send(FRONT_END.saveOtherProfile(viewerUser.id, unchanged), admin);
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: viewerUser.id, name: 'viewer-by-admin', profilePicture: PROFILE_PICTURE, isAdmin: false });
    await signIn('viewer-by-admin', 'viewer-new-password');
    const reset = await send(FRONT_END.saveOtherProfile(viewerUser.id, { ...unchanged, newPassword: 'set-by-admin-1' }), admin);
    expect(reset.status).toBe(200);
    ({ session: viewer } = await signIn('viewer-by-admin', 'set-by-admin-1'));
  });

  test('the admin saves their own profile the same way, the whole record with empty passwords', async () => {
    const form = { name: ADMIN.name, newPassword: '', oldPassword: '', profilePicture: PROFILE_PICTURE, isAdmin: true };
    const response = await send(FRONT_END.saveOwnProfile(adminUser, form), admin);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...adminUser, profilePicture: PROFILE_PICTURE });
    adminUser = response.body;
  });

  test('accounts are deleted by the admin or by their owner, and a deleted account’s session ends', async () => {
    const spare = await send(FRONT_END.createAccount('spare', 'spare-password', false, PROFILE_PICTURE), admin);
    const byAdmin = await send(FRONT_END.deleteAccount(spare.body.id), admin);
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.text).toBe('');
    const bySelf = await send(FRONT_END.deleteAccount(viewer.id), viewer);
    expect(bySelf.status).toBe(200);
    expect((await send(FRONT_END.readUser(viewer), viewer)).status).toBe(401);
    const list = await send(FRONT_END.listUsers(), admin);
    expect(list.body).toEqual([adminUser]);
  });
});
