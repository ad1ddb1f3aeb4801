import type { Knex } from 'knex';
import type { Config } from '../config.js';
import type { components } from '../../generated/openapi/users.js';
import { AppError } from '../errors.js';
import { contractCheck } from '../http/contract-rules.js';
import { hashPassword, verifyPassword } from '../auth/passwords.js';
import type { TokenService } from '../auth/token-service.js';
import { bearerToken } from '../auth/bearer-token.js';
import {
  UserRepository,
  type Settings,
  type UserListEntry,
  type UserListPosition,
  type UserListRow,
  type UserRow,
} from '../store/repositories/user-repository.js';
import { SignInThrottle, throttleOptionsOf, type SignInOutcome, type SignInSettings } from './sign-in-throttle.js';
import { onUniqueViolation } from '../store/unique-violation.js';
import { FirstRunSetup, type FirstRunClaim } from './first-run.js';
import { isAcceptablePassword, MIN_PASSWORD_LENGTH } from '../auth/password-rule.js';

export type UserDto = components['schemas']['UserDto'];
export type CreateUserDto = components['schemas']['CreateUserDto'];
export type UpdateUserDto = components['schemas']['UpdateUserDto'];
export type SignInResponse = components['schemas']['SignInResponse'];

/** One page of `GET /api/users`: the users, the page size used, and the cursor of the next page if one follows. */
export interface UserPage {
  users: UserDto[];
  limit: number;
  next: string | undefined;
}

/** The contract's name and password of a new account (`CreateUserDto`), for the first admin made at sign-in. */
const newNameRules = contractCheck('users', 'CreateUserDto/properties/name');
const newPasswordRules = contractCheck('users', 'CreateUserDto/properties/password');

/** Users per page of `GET /api/users` when the caller names no `limit` (the contract caps it at 1000). */
const DEFAULT_LIST_LIMIT = 100;

/**
 * About how many bytes of users one page of `GET /api/users` may carry (pictures, names, settings as
 * stored): a picture may be a 1.4 MB `data:` URL, so 1000 of them would be a 1.4 GB answer. 8 MiB is
 * five of the largest, or 100 users with the original front end's stock pictures (about 70 KB each).
 */
const PAGE_BYTES = 8 * 1024 * 1024;

/** The longest prefix of `entries` that fits PAGE_BYTES, and never less than one entry. */
function withinPageBytes(entries: UserListEntry[]): UserListEntry[] {
  let bytes = 0;
  let count = 0;
  for (const entry of entries) {
    bytes += Number(entry.size_bytes);
    if (count > 0 && bytes > PAGE_BYTES) break;
    count += 1;
  }
  return entries.slice(0, count);
}

/** The signed-in account behind a request, as its token names it (not yet checked against the store). */
export interface AccountCaller {
  userId: string;
}

/** The users family's settings this service reads (src/settings/table.ts). */
export type UserServiceOptions = Pick<Config, 'accessTokenTtlSeconds'> & SignInSettings;

const DEFAULT_SETTINGS: Settings = {
  autoplayTrailers: true,
  language: 'en',
  animationDuration: 300,
  seriesmanager: { apiKey: '', baseUrl: '', qualityProfileId: 0, rootFolderPath: '', languageProfileId: 0 },
  moviemanager: { apiKey: '', baseUrl: '', qualityProfileId: 0, rootFolderPath: '' },
  mediaserver: { apiKey: '', baseUrl: '', userId: '' },
  metadatadb: { sessionId: '', userId: '' },
};

/**
 * Every rule of the User Account API (docs/users-api.md): who may see and change which account, first-run
 * bootstrap, the last-admin guard, password changes and sign-in throttling.
 */
export class UserService {
  private readonly users: UserRepository;
  private readonly throttle: SignInThrottle;
  private readonly firstRun: FirstRunSetup;

  constructor(
    private readonly knex: Knex,
    private readonly tokens: TokenService,
    private readonly options: UserServiceOptions,
  ) {
    this.users = new UserRepository(knex);
    this.firstRun = new FirstRunSetup(knex);
    this.throttle = new SignInThrottle(knex, throttleOptionsOf(options));
  }

  /**
   * Resolves a bearer token to the caller it names, or undefined when it is missing or invalid. A
   * token this process has verified before is answered at once, without a promise (every request of
   * a busy client); only a token's first use waits for the signature check.
   */
  authenticate(authorization: string | undefined): AccountCaller | undefined | Promise<AccountCaller | undefined> {
    const token = bearerToken(authorization);
    if (!token) return undefined;
    try {
      const claims = this.tokens.verifyCached(token, 'account');
      if (claims) return { userId: claims.sub };
    } catch {
      return undefined;
    }
    return this.tokens.verify(token, 'account').then(
      (claims) => ({ userId: claims.sub }),
      () => undefined,
    );
  }

  /** Tells `observer` how every sign-in ends (the sign-in metrics). */
  observeSignIns(observer: (outcome: SignInOutcome) => void): void {
    this.throttle.observe(observer);
  }

  /**
   * The setup code of a server that has no admin yet (made now if none is stored), or undefined once
   * an admin exists: the server logs it at start (docs/users-api.md, "First run").
   */
  async pendingSetupCode(): Promise<string | undefined> {
    return (await this.users.countAdmins()) > 0 ? undefined : this.firstRun.code();
  }

  /**
   * Checks a name and password. While no admin exists, an unknown name becomes the first admin
   * (the original's onboarding) for a client that `claim` shows may do so. Failures are counted per
   * name and per address.
   */
  async signIn(name: string, password: string, address: string, claim: FirstRunClaim): Promise<SignInResponse> {
    const attempt = await this.throttle.begin('name', name, address);
    let user = await this.users.findByName(name);
    if (!user) {
      user = await this.bootstrapAdminOnSignIn(name, password, claim).catch((error: unknown) => {
        // A refused claim (no setup code, or a wrong one) is a failed sign-in like a wrong password.
        if (error instanceof AppError && error.code === 'permission_denied') this.throttle.failed();
        throw error;
      });
      if (user) {
        await this.throttle.succeeded(attempt);
        return this.signedIn(user);
      }
    }
    if (!(await verifyPassword(user?.password_hash, password)) || !user) {
      this.throttle.failed();
      throw new AppError('unauthenticated', 'Unauthorized');
    }
    await this.throttle.succeeded(attempt);
    return this.signedIn(user);
  }

  /**
   * One page of the user list, oldest first (admins only), and the cursor of the next page when more
   * users follow. A page holds at most `limit` users and stops early once they fill PAGE_BYTES
   * (always at least one user), so its size is bounded whatever the pictures.
   * `after` is a cursor this service issued; anything else is a 400 naming `after`.
   */
  async list(caller: AccountCaller, page: { limit?: number; after?: string } = {}): Promise<UserPage> {
    const position = page.after === undefined ? undefined : decodeListCursor(page.after);
    const limit = page.limit ?? DEFAULT_LIST_LIMIT;
    const self = await this.requireCaller(caller);
    if (!self.is_admin) throw new AppError('permission_denied', 'Forbidden');
    // One entry more than the page says whether another page follows.
    const entries = await this.users.listPositions(limit + 1, position);
    const kept = withinPageBytes(entries.slice(0, limit));
    const lastEntry = kept[kept.length - 1];
    if (!lastEntry) return { users: [], limit, next: undefined };
    const last = { createdAtMicros: lastEntry.created_at_micros, id: lastEntry.id };
    return {
      users: (await this.users.listRange(position, last, kept.length)).map(toUserDto),
      limit,
      next: kept.length < entries.length ? encodeListCursor(last) : undefined,
    };
  }

  /**
   * Creates a user: while no admin exists, open to a client that `claim` shows may set the server up
   * (first run); to admins only afterwards.
   */
  async create(caller: AccountCaller | undefined, input: CreateUserDto, claim: FirstRunClaim): Promise<UserDto> {
    // Refuse strangers before paying for a hash (~20 ms of CPU each); re-checked under the lock below.
    await this.requireCreator(caller, claim);
    const passwordHash = await hashPassword(input.password);
    return this.knex.transaction(async (trx) => {
      await this.users.lockAdmins(trx);
      await this.requireCreator(caller, claim, trx);
      const user = await this.insertUnique(trx, input.name, passwordHash, input.isAdmin, input.profilePicture ?? '');
      if (user.is_admin) await this.firstRun.close(trx);
      return toUserDto(user);
    });
  }

  /** Reads a user and its caller in one round trip: the admin or the user themself see it, nobody else. */
  get(caller: AccountCaller, id: string): Promise<UserDto> {
    // No async layer of its own: the hottest read (every GET by id, every user principal).
    return this.users.findByIds(caller.userId === id ? [id] : [caller.userId, id]).then((rows) => {
      const self = rows.find((row) => row.id === caller.userId);
      if (!self) throw new AppError('unauthenticated', 'Unauthorized');
      const target = rows.find((row) => row.id === id);
      if (!target || !(self.is_admin || self.id === id)) throw notFound();
      return toUserDto(target);
    });
  }

  /**
   * Applies exactly the fields present in `body`. A UserDto sent back whole is a valid body: its `id`
   * must name the user in the path and is otherwise ignored, and an empty `password` with an empty
   * `oldPassword` leaves the password alone (how the original front end saves a profile).
   */
  async update(caller: AccountCaller, id: string, body: UpdateUserDto): Promise<UserDto> {
    const input = changesOf(id, body);
    const newHash = input.password === undefined ? undefined : await hashPassword(input.password);
    return this.knex.transaction(async (trx) => {
      if (input.isAdmin !== undefined) await this.users.lockAdmins(trx);
      const { self, target } = await this.visibleTarget(caller, id, trx);
      const patch: Partial<Omit<UserRow, 'id'>> = {};
      if (input.isAdmin !== undefined && input.isAdmin !== target.is_admin) {
        if (!self.is_admin) throw new AppError('permission_denied', 'Forbidden');
        if (!input.isAdmin && (await this.users.countAdmins(trx)) <= 1) {
          throw new AppError('failed_precondition', 'Conflict', { violations: [{ field: 'isAdmin', message: 'the last admin cannot be removed' }] });
        }
        patch.is_admin = input.isAdmin;
      }
      if (newHash !== undefined) {
        if (self.id === target.id && !(await verifyPassword(target.password_hash, input.oldPassword ?? ''))) {
          throw new AppError('invalid_argument', 'Password mismatch', { violations: [{ field: 'oldPassword', message: 'Password mismatch' }] });
        }
        patch.password_hash = newHash;
      }
      if (input.name !== undefined && input.name !== target.name) {
        const holder = await this.users.findByFoldedName(input.name, trx);
        if (holder && holder.id !== target.id) throw nameTaken();
        patch.name = input.name;
      }
      if (input.onboardingDone !== undefined) patch.onboarding_done = input.onboardingDone;
      if (input.profilePicture !== undefined) patch.profile_picture = input.profilePicture;
      if (input.settings !== undefined) patch.settings = input.settings;
      const updated = Object.keys(patch).length === 0 ? target : await this.users.update(id, patch, trx).catch(uniqueNameViolation);
      if (!updated) throw notFound();
      return toUserDto(updated);
    });
  }

  /** Deletes a user; the last admin stays. */
  async remove(caller: AccountCaller, id: string): Promise<void> {
    await this.knex.transaction(async (trx) => {
      await this.users.lockAdmins(trx);
      const { target } = await this.visibleTarget(caller, id, trx);
      if (target.is_admin && (await this.users.countAdmins(trx)) <= 1) {
        throw new AppError('failed_precondition', 'Conflict', { violations: [{ field: 'id', message: 'the last admin cannot be deleted' }] });
      }
      await this.users.delete(id, trx);
    });
  }

  /**
   * Creates the configured admin at start when that name is free. Several processes starting on one
   * database race here; the loser sees the name taken and starts normally instead of crashing.
   */
  async ensureAdmin(name: string, password: string): Promise<boolean> {
    if (await this.users.findByName(name)) return false;
    const passwordHash = await hashPassword(password);
    try {
      return await this.knex.transaction(async (trx) => {
        await this.users.lockAdmins(trx);
        await this.insertUnique(trx, name, passwordHash, true, '');
        await this.firstRun.close(trx);
        return true;
      });
    } catch (error) {
      if (error instanceof AppError && error.code === 'already_exists') return false;
      throw error;
    }
  }

  private async bootstrapAdminOnSignIn(name: string, password: string, claim: FirstRunClaim): Promise<UserRow | undefined> {
    if ((await this.users.countAdmins()) > 0) return undefined;
    // Refuse strangers before paying for a hash; re-checked under the lock below.
    await this.firstRun.check(claim, this.knex);
    // The sign-in body becomes an account, so it must keep the contract's rules of a new one.
    const violations = [...newNameRules(name), ...newPasswordRules(password)];
    if (violations.length > 0) throw new AppError('invalid_argument', 'Bad Request', { violations });
    const passwordHash = await hashPassword(password);
    return this.knex.transaction(async (trx) => {
      await this.users.lockAdmins(trx);
      if ((await this.users.countAdmins(trx)) > 0 || (await this.users.findByName(name, trx))) return undefined;
      await this.firstRun.check(claim, trx);
      const admin = await this.insertUnique(trx, name, passwordHash, true, '');
      await this.firstRun.close(trx);
      return admin;
    });
  }

  /**
   * Names are unique regardless of case and surrounding spaces (docs/users-api.md): `ADMIN` or
   * `admin ` next to `admin` would let one account pass for another in every list.
   */
  private async insertUnique(trx: Knex, name: string, passwordHash: string, isAdmin: boolean, profilePicture: string): Promise<UserRow> {
    if (await this.users.findByFoldedName(name, trx)) throw nameTaken();
    return this.users
      .insert(
        { name, password_hash: passwordHash, is_admin: isAdmin, onboarding_done: false, profile_picture: profilePicture, settings: DEFAULT_SETTINGS },
        trx,
      )
      .catch(uniqueNameViolation);
  }

  private async visibleTarget(caller: AccountCaller, id: string, trx: Knex): Promise<{ self: UserRow; target: UserRow }> {
    const rows = await this.users.findByIds([caller.userId, id], trx);
    const self = rows.find((row) => row.id === caller.userId);
    if (!self) throw new AppError('unauthenticated', 'Unauthorized');
    const target = rows.find((row) => row.id === id);
    if (!target || !(self.is_admin || self.id === id)) throw notFound();
    return { self, target };
  }

  /** While no admin exists whoever may set the server up creates users (bootstrap); afterwards only admins. */
  private async requireCreator(caller: AccountCaller | undefined, claim: FirstRunClaim, trx?: Knex): Promise<void> {
    if ((await this.users.countAdmins(trx)) === 0) return this.firstRun.check(claim, trx ?? this.knex);
    if (!caller) throw new AppError('unauthenticated', 'Unauthorized');
    const self = await this.requireCaller(caller, trx);
    if (!self.is_admin) throw new AppError('permission_denied', 'Forbidden');
  }

  private async requireCaller(caller: AccountCaller, trx?: Knex): Promise<UserRow> {
    const self = await this.users.findById(caller.userId, trx);
    if (!self) throw new AppError('unauthenticated', 'Unauthorized');
    return self;
  }

  private signedIn(user: UserRow): SignInResponse {
    return {
      accessToken: this.tokens.sign({ sub: user.id, aud: 'account' }, this.options.accessTokenTtlSeconds),
      user: toUserDto(user),
    };
  }
}

/**
 * The changes an update body asks for. The read-only `id` is checked against the path and dropped; an
 * empty `password` with an empty or absent `oldPassword` means "unchanged" and drops both; any other
 * password shorter than MIN_PASSWORD_LENGTH is a 400 (the contract allows the empty string for this reason).
 */
function changesOf(pathId: string, body: UpdateUserDto): Omit<UpdateUserDto, 'id'> {
  const { id, ...changes } = body;
  if (id !== undefined && id.toLowerCase() !== pathId.toLowerCase()) {
    throw new AppError('invalid_argument', 'Bad Request', { violations: [{ field: 'id', message: 'must equal the id in the path (it is read-only)' }] });
  }
  if (changes.password === '' && (changes.oldPassword ?? '') === '') {
    delete changes.password;
    delete changes.oldPassword;
  }
  if (changes.password !== undefined && !isAcceptablePassword(changes.password)) {
    const message =
      changes.password === ''
        ? `must NOT have fewer than ${MIN_PASSWORD_LENGTH} characters (an empty password means "unchanged" only with an empty oldPassword)`
        : `must NOT have fewer than ${MIN_PASSWORD_LENGTH} characters`;
    throw new AppError('invalid_argument', 'Bad Request', { violations: [{ field: 'password', message }] });
  }
  return changes;
}

/**
 * The opaque cursor of the user listing: the last listed user's creation time (microseconds) and id,
 * base64url-encoded. It is not signed: a forged one only moves the start of a page the caller may read.
 */
function encodeListCursor(position: UserListPosition): string {
  return Buffer.from(`${position.createdAtMicros}_${position.id}`).toString('base64url');
}

const LIST_CURSOR = /^(\d{1,16})_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** The position a cursor names; anything this service did not issue → 400 naming `after`. */
function decodeListCursor(cursor: string): UserListPosition {
  const match = /^[A-Za-z0-9_-]+$/.test(cursor) ? LIST_CURSOR.exec(Buffer.from(cursor, 'base64url').toString('latin1')) : null;
  const position = match?.[1] && match[2] ? { createdAtMicros: match[1], id: match[2] } : undefined;
  // Only the exact text this service issues: no padding, no leading zeros, no other spelling of the same bytes.
  if (!position || !Number.isSafeInteger(Number(position.createdAtMicros)) || encodeListCursor(position) !== cursor || /^0\d/.test(position.createdAtMicros)) {
    throw new AppError('invalid_argument', 'Bad Request', { violations: [{ field: 'after', message: 'is not a cursor from a Link header of this API' }] });
  }
  return position;
}

/** The wire shape of a user; the password hash never leaves the service. */
function toUserDto(row: UserListRow): UserDto {
  return {
    id: row.id,
    name: row.name,
    isAdmin: row.is_admin,
    onboardingDone: row.onboarding_done,
    settings: row.settings,
    profilePicture: row.profile_picture,
  };
}

function notFound(): AppError {
  return new AppError('not_found', 'Not Found');
}

function nameTaken(): AppError {
  return new AppError('already_exists', 'Conflict', { violations: [{ field: 'name', message: 'is already taken' }] });
}

/** A concurrent insert of the same name loses on the unique index; that is a 409, not a 500. */
const uniqueNameViolation = onUniqueViolation(nameTaken);
