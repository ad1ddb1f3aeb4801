import type { Knex } from 'knex';
import { AppError } from '../../errors.js';
import { contractCheck } from '../../http/contract-rules.js';
import { hashPassword, verifyPassword } from '../../auth/passwords.js';
import type { TokenService } from '../../auth/token-service.js';
import { WriterRepository, type ListedUserRow, type PublishingUserRow } from '../../store/repositories/publishing/writer-repository.js';
import {
  ALL_ROLES,
  AUTHOR_ROLES,
  InputCheck,
  isSuperuser,
  iso,
  onUniqueViolation,
  requireCaller,
  requireContract,
  requireRole,
  type ListPaging,
  type PublishingCaller,
} from './rules.js';
import { countFor, pageOf, pageRequest, TIMESTAMP_KEY, type ListOrder } from './page.js';
import type { LoginResult, Writer, WriterInput, WriterList } from './types.js';
import { SignInThrottle, type SignInOutcome, type SignInThrottleOptions } from '../sign-in-throttle.js';

/** The contract's rules of a new user (`WriterInput`: email, password and name bounds, role), for every way one is made. */
const writerRules = contractCheck('publishing', 'WriterInput');

// Writers are ordered by createdAt, then id.
const WRITER_ORDER: ListOrder = { name: 'writers', key: TIMESTAMP_KEY };

/**
 * Publishing users (docs/publishing.md): sign-in and tokens of audience `publishing`, creation by superusers,
 * and who sees whom — writers are public, readers only to superusers and themselves, an email only
 * to its owner and superusers. Passwords are argon2id hashes and never leave this service.
 */
export class WriterService {
  private readonly users: WriterRepository;
  private readonly throttle: SignInThrottle;

  constructor(
    private readonly knex: Knex,
    private readonly tokens: TokenService,
    private readonly accessTokenTtlSeconds: number,
    signIn: SignInThrottleOptions,
  ) {
    this.users = new WriterRepository(knex);
    this.throttle = new SignInThrottle(knex, { ...signIn, message: 'Too many failed sign-ins for this email or from this address; try again later.' });
  }

  /**
   * Resolves an access token to its caller. No token → undefined (anonymous); a token that is
   * malformed, expired, for another API, or whose user no longer exists → 401.
   */
  async authenticate(token: string | undefined): Promise<PublishingCaller | undefined> {
    if (token === undefined) return undefined;
    const claims = await this.tokens.verify(token, 'publishing');
    const row = await this.users.findById(claims.sub);
    if (!row) throw new AppError('unauthenticated', 'A valid access token is required.');
    return { id: row.id, role: row.role };
  }

  /** Tells `observer` how every sign-in ends (the sign-in metrics). */
  observeSignIns(observer: (outcome: SignInOutcome) => void): void {
    this.throttle.observe(observer);
  }

  /**
   * Checks email and password; both failures look and take the same (argon2 runs either way).
   * Attempts are throttled per email and per client address like `POST /api/auth` (429 beyond).
   */
  async login(email: string, password: string, address: string | undefined): Promise<LoginResult> {
    const attempt = await this.throttle.begin('email', String(email), address);
    const row = typeof email === 'string' && email.length <= 254 ? await this.users.findByEmail(email) : undefined;
    if (!(await verifyPassword(row?.password_hash, String(password))) || !row) {
      this.throttle.failed();
      throw new AppError('unauthenticated', 'Wrong email or password.');
    }
    await this.throttle.succeeded(attempt);
    return {
      accessToken: this.tokens.sign({ sub: row.id, aud: 'publishing' }, this.accessTokenTtlSeconds),
      user: toWriter(row, { id: row.id, role: row.role }),
    };
  }

  /** Creates a user (superusers only); the role defaults to writer, the email must be unused in any case. */
  async create(caller: PublishingCaller | undefined, input: WriterInput): Promise<Writer> {
    const self = requireRole(caller, isSuperuser, 'Only superusers may create writers.');
    requireContract(writerRules, input);
    const check = new InputCheck();
    check.notBlank('name', input.name);
    check.done();
    return toWriter(await this.insert(input.email, input.password, input.name, input.role ?? 'writer', input.profileImage?.url ?? null), self);
  }

  /** Writers oldest first, by cursor or capped offset, with a bounded total (page.ts); superusers see readers too. */
  async list(viewer: PublishingCaller | undefined, paging: ListPaging = {}): Promise<WriterList> {
    const request = pageRequest(WRITER_ORDER, paging.limit, paging.offset, paging.after);
    const roles = isSuperuser(viewer) ? ALL_ROLES : AUTHOR_ROLES;
    const rows = await this.users.list(roles, { take: request.limit + 1, offset: request.offset, after: request.after });
    const counted = await countFor(request, rows, (bound) => this.users.count(roles, bound));
    const { rows: shown, page } = pageOf(WRITER_ORDER, request, { rows, counted }, (row) => ({ key: row.sort_key, id: row.id }));
    return { items: shown.map((row) => toWriter(row, viewer)), ...page };
  }

  /** One user as the viewer may see them; 404 when there is none or it is hidden from them. */
  async get(viewer: PublishingCaller | undefined, id: string): Promise<Writer> {
    const [writer] = await this.getMany(viewer, [id]);
    if (!writer) throw new AppError('not_found', 'No such writer.');
    return writer;
  }

  /** Many users in one query, in the order asked, null where hidden or unknown (batch loading). */
  async getMany(viewer: PublishingCaller | undefined, ids: readonly string[]): Promise<Array<Writer | null>> {
    const byId = new Map((await this.users.findByIds(ids)).map((row) => [row.id, row]));
    return ids.map((id) => {
      const row = byId.get(id);
      return row && visible(viewer, row) ? toWriter(row, viewer) : null;
    });
  }

  /** The signed-in user. */
  async me(caller: PublishingCaller | undefined): Promise<Writer> {
    const self = requireCaller(caller);
    return this.get(self, self.id);
  }

  /** Creates a superuser when the email is free (SUPERUSER_EMAIL at start, the CLI); answers whether it did. */
  async ensureSuperuser(email: string, password: string, name = 'Superuser'): Promise<boolean> {
    if (await this.users.findByEmail(email)) return false;
    requireContract(writerRules, { email, password, name });
    const check = new InputCheck();
    check.notBlank('name', name);
    check.done();
    try {
      await this.insert(email, password, name, 'superuser', null);
      return true;
    } catch (error) {
      if (error instanceof AppError && error.code === 'already_exists') return false;
      throw error;
    }
  }

  private async insert(
    email: string,
    password: string,
    name: string,
    role: PublishingUserRow['role'],
    profileImageUrl: string | null,
  ): Promise<PublishingUserRow> {
    const passwordHash = await hashPassword(password);
    if (await this.users.findByEmail(email)) throw emailTaken();
    return this.users.insert({ email, password_hash: passwordHash, name, role, profile_image_url: profileImageUrl }).catch(onUniqueViolation(emailTaken));
  }
}

function visible(viewer: PublishingCaller | undefined, row: ListedUserRow): boolean {
  return AUTHOR_ROLES.includes(row.role) || isSuperuser(viewer) || viewer?.id === row.id;
}

/** The wire shape of a user for one viewer: never a password, an email only for its owner and superusers. */
function toWriter(row: ListedUserRow, viewer: PublishingCaller | undefined): Writer {
  const writer: Writer = { _id: row.id, name: row.name, role: row.role, createdAt: iso(row.created_at), modifiedAt: iso(row.modified_at) };
  if (viewer && (viewer.id === row.id || isSuperuser(viewer))) writer.email = row.email;
  if (row.profile_image_url !== null) writer.profileImage = { url: row.profile_image_url };
  return writer;
}

function emailTaken(): AppError {
  return new AppError('already_exists', 'A user with this email already exists.', { violations: [{ field: 'email', message: 'is already taken' }] });
}
