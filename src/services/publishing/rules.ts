import { AppError, type Violation } from '../../errors.js';
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

/** Collects violations of one input; `done()` throws a 400 naming all of them. */
export class InputCheck {
  readonly violations: Violation[] = [];

  text(field: string, value: unknown, min: number, max: number): void {
    if (typeof value !== 'string') this.violations.push({ field, message: 'must be a string' });
    else if (value.trim().length < min) this.violations.push({ field, message: min === 1 ? 'must not be blank' : `must be at least ${min} characters` });
    else if (value.length > max) this.violations.push({ field, message: `must be at most ${max} characters` });
  }

  url(field: string, value: unknown): void {
    if (typeof value !== 'string' || value.length > 2048 || !URL.canParse(value)) this.violations.push({ field, message: 'must be an absolute URL' });
  }

  email(field: string, value: unknown): void {
    // The same practical shape ajv-formats accepts: one @, no spaces, a dot in the domain.
    if (typeof value !== 'string' || value.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value))
      this.violations.push({ field, message: 'must be an email address' });
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
