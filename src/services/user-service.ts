import type { Knex } from 'knex';
import type { components } from '../../generated/openapi/users.js';
import { AppError } from '../errors.js';
import { hashPassword, verifyPassword } from '../auth/passwords.js';
import type { TokenService } from '../auth/token-service.js';
import { bearerToken } from '../auth/bearer-token.js';
import { UserRepository, type Settings, type UserRow } from '../store/repositories/user-repository.js';
import { normaliseName, SignInThrottle } from './sign-in-throttle.js';
import { onUniqueViolation } from '../store/unique-violation.js';

export type UserDto = components['schemas']['UserDto'];
export type CreateUserDto = components['schemas']['CreateUserDto'];
export type UpdateUserDto = components['schemas']['UpdateUserDto'];
export type SignInResponse = components['schemas']['SignInResponse'];

/** The signed-in account behind a request, as its token names it (not yet checked against the store). */
export interface AccountCaller {
  userId: string;
}

export interface UserServiceOptions {
  accessTokenTtlSeconds: number;
  signInMaxFailures: number;
  signInWindowSeconds: number;
  signInNameMaxFailures?: number;
}

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

  constructor(
    private readonly knex: Knex,
    private readonly tokens: TokenService,
    private readonly options: UserServiceOptions,
  ) {
    this.users = new UserRepository(knex);
    this.throttle = new SignInThrottle(knex, {
      maxFailures: options.signInMaxFailures,
      windowSeconds: options.signInWindowSeconds,
      nameMaxFailures: options.signInNameMaxFailures,
    });
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

  /**
   * Checks a name and password. While no admin exists, an unknown name becomes the first admin
   * (the original's onboarding). Failures are counted per name and per address.
   */
  async signIn(name: string, password: string, address: string): Promise<SignInResponse> {
    const attempt = await this.throttle.begin('name', name, address);
    let user = await this.users.findByName(name);
    if (!user) {
      user = await this.bootstrapAdminOnSignIn(name, password);
      if (user) {
        await this.throttle.succeeded(attempt);
        return this.signedIn(user);
      }
    }
    if (!(await verifyPassword(user?.password_hash, password)) || !user) {
      throw new AppError('unauthenticated', 'Unauthorized');
    }
    await this.throttle.succeeded(attempt);
    return this.signedIn(user);
  }

  async list(caller: AccountCaller): Promise<UserDto[]> {
    const self = await this.requireCaller(caller);
    if (!self.is_admin) throw new AppError('permission_denied', 'Forbidden');
    return (await this.users.list()).map(toUserDto);
  }

  /** Creates a user: open to anyone while no admin exists, to admins only afterwards. */
  async create(caller: AccountCaller | undefined, input: CreateUserDto): Promise<UserDto> {
    // Refuse strangers before paying for a hash (~20 ms of CPU each); re-checked under the lock below.
    await this.requireCreator(caller);
    const passwordHash = await hashPassword(input.password);
    return this.knex.transaction(async (trx) => {
      await this.users.lockAdmins(trx);
      await this.requireCreator(caller, trx);
      return toUserDto(await this.insertUnique(trx, input.name, passwordHash, input.isAdmin, input.profilePicture ?? ''));
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

  /** Applies exactly the fields present in `input`. */
  async update(caller: AccountCaller, id: string, input: UpdateUserDto): Promise<UserDto> {
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
        const holder = await this.users.findByFoldedName(normaliseName(input.name), trx);
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
        return true;
      });
    } catch (error) {
      if (error instanceof AppError && error.code === 'already_exists') return false;
      throw error;
    }
  }

  private async bootstrapAdminOnSignIn(name: string, password: string): Promise<UserRow | undefined> {
    if ((await this.users.countAdmins()) > 0) return undefined;
    if (name.trim() === '' || password.length < 8) {
      throw new AppError('invalid_argument', 'Bad Request', {
        violations: [{ field: 'password', message: 'the first admin needs a name and a password of at least 8 characters' }],
      });
    }
    const passwordHash = await hashPassword(password);
    return this.knex.transaction(async (trx) => {
      await this.users.lockAdmins(trx);
      if ((await this.users.countAdmins(trx)) > 0 || (await this.users.findByName(name, trx))) return undefined;
      return this.insertUnique(trx, name, passwordHash, true, '');
    });
  }

  /**
   * Names are unique regardless of case and surrounding spaces (docs/users-api.md): `ADMIN` or
   * `admin ` next to `admin` would let one account pass for another in every list.
   */
  private async insertUnique(trx: Knex, name: string, passwordHash: string, isAdmin: boolean, profilePicture: string): Promise<UserRow> {
    if (await this.users.findByFoldedName(normaliseName(name), trx)) throw nameTaken();
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

  /** While no admin exists anyone may create users (bootstrap); afterwards only admins. */
  private async requireCreator(caller: AccountCaller | undefined, trx?: Knex): Promise<void> {
    if ((await this.users.countAdmins(trx)) === 0) return;
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

/** The wire shape of a user; the password hash never leaves the service. */
function toUserDto(row: UserRow): UserDto {
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
