import { createHash } from 'node:crypto';
import { AppError } from '../../errors.js';

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 1000;

/** 0 → the default; above the maximum → the maximum; negative → INVALID_ARGUMENT. */
export function pageSize(requested: bigint | number): number {
  const size = Number(requested);
  if (size < 0)
    throw new AppError('invalid_argument', 'page_size must not be negative', { violations: [{ field: 'page_size', message: 'must not be negative' }] });
  if (size === 0) return DEFAULT_PAGE_SIZE;
  return Math.min(size, MAX_PAGE_SIZE);
}

function scopeTag(scope: string): string {
  return createHash('sha256').update(scope).digest('base64url').slice(0, 8);
}

/**
 * An opaque keyset cursor: the last row's `seq`, bound to the query it came from (a token of one
 * list does not page another).
 */
function encodePageToken(scope: string, seq: number): string {
  return Buffer.from(`${scopeTag(scope)}:${seq}`).toString('base64url');
}

/** The `seq` of a page token; empty → undefined; malformed or foreign → INVALID_ARGUMENT. */
export function decodePageToken(scope: string, token: string): number | undefined {
  if (token === '') return undefined;
  const match = /^([A-Za-z0-9_-]{8}):(\d{1,15})$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  if (!match || match[1] !== scopeTag(scope)) {
    throw new AppError('invalid_argument', 'page_token is not a token of this list', {
      violations: [{ field: 'page_token', message: 'is malformed or belongs to another query' }],
    });
  }
  return Number(match[2]);
}

/** One page of a List: the items and the token of the next page ('' on the last). */
export interface Page<T> {
  items: T[];
  nextPageToken: string;
}

/**
 * The page a keyset query answered: callers fetch `size + 1` rows, the extra one only says that
 * another page exists; the next token points after the last row kept.
 */
export function pageFrom<Row extends { seq: number }>(rows: Row[], size: number, scope: string): Page<Row>;
export function pageFrom<Row extends { seq: number }, Item>(rows: Row[], size: number, scope: string, toItem: (row: Row) => Item): Page<Item>;
export function pageFrom<Row extends { seq: number }, Item>(rows: Row[], size: number, scope: string, toItem?: (row: Row) => Item): Page<Row | Item> {
  const page = rows.slice(0, size);
  const last = page[page.length - 1];
  return {
    items: toItem ? page.map((row) => toItem(row)) : page,
    nextPageToken: rows.length > size && last ? encodePageToken(scope, last.seq) : '',
  };
}

/**
 * The page of a filtered keyset query (src/store/filtered-list.ts): as pageFrom, and when the
 * query stopped at its scan bound (`resumeAfter`, the `seq` of the last row it examined) a short
 * page still carries a token that resumes after that row.
 */
export function boundedPageFrom<Row extends { seq: number }, Item>(
  rows: Row[],
  size: number,
  scope: string,
  toItem: (row: Row) => Item,
  resumeAfter: number | undefined,
): Page<Item> {
  const page = pageFrom(rows, size, scope, toItem);
  if (page.nextPageToken !== '' || resumeAfter === undefined) return page;
  return { ...page, nextPageToken: encodePageToken(scope, resumeAfter) };
}
