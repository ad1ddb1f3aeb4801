import { AppError, type Violation } from '../../errors.js';
import type { ContractCheck } from '../../http/contract-rules.js';
import type { PublishingRole } from '../../store/repositories/publishing/writer-repository.js';

/** The signed-in publishing user behind a request: id and role, as stored when the token was checked. */
export interface PublishingCaller {
  id: string;
  role: PublishingRole;
}

/** Roles that can author articles: a "writer" in the URL space. */
export const AUTHOR_ROLES: readonly PublishingRole[] = ['writer', 'editor', 'superuser'];
export const ALL_ROLES = ['superuser', 'editor', 'writer', 'reader'] as const satisfies readonly PublishingRole[];
const everyRoleListed: PublishingRole extends (typeof ALL_ROLES)[number] ? true : never = true;
void everyRoleListed;

/** Whether the caller can author articles (superuser passes every role check). */
export function isAuthor(caller: PublishingCaller | undefined): boolean {
  return caller !== undefined && AUTHOR_ROLES.includes(caller.role);
}

/** Whether the caller can edit and publish anyone's article. */
export function isEditor(caller: PublishingCaller | undefined): boolean {
  return caller?.role === 'editor' || caller?.role === 'superuser';
}

export function isSuperuser(caller: PublishingCaller | undefined): boolean {
  return caller?.role === 'superuser';
}

/** The caller, or 401 when the request is anonymous. */
export function requireCaller(caller: PublishingCaller | undefined): PublishingCaller {
  if (!caller) throw new AppError('unauthenticated', 'A valid access token is required.');
  return caller;
}

/** 401 when anonymous, 403 when signed in without the role. */
export function requireRole(caller: PublishingCaller | undefined, allowed: (caller: PublishingCaller) => boolean, detail: string): PublishingCaller {
  const known = requireCaller(caller);
  if (!allowed(known)) throw new AppError('permission_denied', detail);
  return known;
}

/** How a list request pages, as the caller sent it (checked by `pageRequest`, page.ts). */
export interface ListPaging {
  limit?: number | null | undefined;
  offset?: number | null | undefined;
  /** The `next` cursor of the previous page. */
  after?: string | null | undefined;
}

/**
 * The contract's rules for an input (a `contractCheck` of contracts/openapi/publishing.yaml), applied
 * as the REST engine applies them: every violation at once, before any rule of the service, so
 * GraphQL answers exactly what REST answers for the same input.
 */
export function requireContract(rules: ContractCheck, value: unknown): void {
  const violations = rules(value);
  if (violations.length > 0) throw invalid(violations);
}

/** Collects violations of the service's own rules (beyond the contract's); `done()` throws a 400 naming all of them. */
export class InputCheck {
  readonly violations: Violation[] = [];

  /** Text the contract lets through but that says nothing: empty after trimming. */
  notBlank(field: string, value: string): void {
    if (value.trim() === '') this.violations.push({ field, message: 'must not be blank' });
  }

  check(field: string, ok: boolean, message: string): void {
    if (!ok) this.violations.push({ field, message });
  }

  done(): void {
    if (this.violations.length > 0) throw invalid(this.violations);
  }
}

function invalid(violations: Violation[]): AppError {
  return new AppError('invalid_argument', 'The request is invalid.', { violations });
}

/** A unique index lost to a concurrent insert is the same 409 as the check before it. */
export { onUniqueViolation } from '../../store/unique-violation.js';

export function iso(value: Date | string): string {
  return new Date(value).toISOString();
}
