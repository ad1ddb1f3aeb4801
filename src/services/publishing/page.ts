import { AppError, type Violation } from '../../errors.js';

/**
 * How every `/v1` list (and its GraphQL twin) pages, so that no page costs more than the page:
 * a keyset cursor (`after`) for walking, a capped `offset` for compatibility, and a `total` that is
 * counted only up to TOTAL_BOUND (docs/publishing.md, "Lists at any size").
 */
const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;
/** The largest `offset`: skipping costs a walk over every skipped row, so it is bounded like the count. */
const MAX_OFFSET = 10_000;
/**
 * `total` is exact up to this many matching rows; beyond it, `total` is this and `totalExact` false.
 * `totalExact: false` always means "at least `total`" (a full-text count may stop earlier).
 */
const TOTAL_BOUND = 10_000;

/**
 * One list's order, as a cursor names it: `name` binds a cursor to the list it came from (a drafts
 * cursor is no cursor for published articles), `key` is what a sort key may look like.
 */
export interface ListOrder {
  name: string;
  key: RegExp;
}

/** A sort key that is a timestamp, as the repositories print it: ISO 8601 UTC with microseconds. */
export const TIMESTAMP_KEY = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** A position in one list's order: the sort key (as the store prints it) and the id that breaks ties. */
export interface Position {
  key: string;
  id: string;
}

/** What a list request asks for, checked: a page size, a skip count, and where the previous page ended. */
export interface PageRequest {
  limit: number;
  offset: number;
  after: Position | undefined;
}

/** A count from the store: `n` matching rows, or, when `atLeast`, at least `n` (it stopped early). */
export interface MatchCount {
  n: number;
  atLeast: boolean;
}

/** A page as the repositories answer it: the rows, and the matching count up to TOTAL_BOUND + 1. */
export interface CountedRows<Row> {
  rows: Row[];
  counted: MatchCount;
}

/** The page fields every list answers besides its items. */
export interface PageInfo {
  total: number;
  totalExact: boolean;
  limit: number;
  offset: number;
  next: string | null;
}

/**
 * Checks `limit` (1–100, default 20), `offset` (0–MAX_OFFSET) and `after` (a cursor this same list
 * handed out, of this `order`); one 400 names every bad field. `after` and a non-zero `offset`
 * together are refused: a cursor already says where the page starts.
 */
export function pageRequest(
  order: ListOrder,
  limit: number | null | undefined,
  offset: number | null | undefined,
  after: string | null | undefined,
): PageRequest {
  const page = { limit: limit ?? DEFAULT_LIMIT, offset: offset ?? 0 };
  const violations: Violation[] = [];
  if (!Number.isInteger(page.limit) || page.limit < 1 || page.limit > MAX_LIMIT)
    violations.push({ field: 'limit', message: `must be between 1 and ${MAX_LIMIT}` });
  if (!Number.isInteger(page.offset) || page.offset < 0 || page.offset > MAX_OFFSET)
    violations.push({ field: 'offset', message: `must be between 0 and ${MAX_OFFSET}; page further with the \`next\` cursor (\`after\`)` });
  let position: Position | undefined;
  if (after != null) {
    position = decodeCursor(order, after);
    if (!position) violations.push({ field: 'after', message: 'must be a `next` cursor of this same list' });
    else if (page.offset > 0) violations.push({ field: 'offset', message: 'must be 0 (or left out) when `after` is given' });
  }
  if (violations.length > 0) throw new AppError('invalid_argument', 'The request is invalid.', { violations });
  return { ...page, after: position };
}

/**
 * The page fields of an answer. `rows` is what the store returned for `limit + 1` rows: the extra
 * row only tells that there is a next page, whose cursor is the position of the last row shown.
 */
export function pageOf<Row>(
  order: ListOrder,
  request: PageRequest,
  { rows, counted }: CountedRows<Row>,
  positionOf: (row: Row) => Position,
): { rows: Row[]; page: PageInfo } {
  const shown = rows.slice(0, request.limit);
  const last = shown.at(-1);
  const next = rows.length > request.limit && last !== undefined ? encodeCursor(order, positionOf(last)) : null;
  return {
    rows: shown,
    page: {
      total: Math.min(counted.n, TOTAL_BOUND),
      totalExact: !counted.atLeast && counted.n <= TOTAL_BOUND,
      limit: request.limit,
      offset: request.offset,
      next,
    },
  };
}

/**
 * The count a page needs: when the first page is not full, its rows are every matching row and no
 * count is run at all; otherwise `count` (bounded to TOTAL_BOUND + 1 rows by the repository).
 */
export async function countFor<Row>(request: PageRequest, rows: Row[], count: (bound: number) => Promise<number | MatchCount>): Promise<MatchCount> {
  if (request.after === undefined && request.offset === 0 && rows.length <= request.limit) return { n: rows.length, atLeast: false };
  const counted = await count(TOTAL_BOUND + 1);
  return typeof counted === 'number' ? { n: counted, atLeast: false } : counted;
}

// A cursor is opaque to clients: base64url of `[order name, key, id]`.
function encodeCursor(order: ListOrder, position: Position): string {
  return Buffer.from(JSON.stringify([order.name, position.key, position.id])).toString('base64url');
}

function decodeCursor(order: ListOrder, cursor: string): Position | undefined {
  if (cursor.length === 0 || cursor.length > 200 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(decoded) || decoded.length !== 3) return undefined;
  const [name, key, id] = decoded as unknown[];
  if (name !== order.name || typeof key !== 'string' || typeof id !== 'string' || key.length > 120 || !order.key.test(key) || !/^[0-9a-f]{24}$/.test(id))
    return undefined;
  return { key, id };
}
