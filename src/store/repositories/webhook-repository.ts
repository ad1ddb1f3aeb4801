import type { Knex } from 'knex';
import type { VerifyConfig } from '../../engines/webhook-signature/index.js';
import type { CapturedRecord, HeaderLine, StoredSignatureCheck } from './webhook-records.js';
import { capturedEventSql, encodeWebhookEvent, WEBHOOK_CHANNEL } from './webhook-events.js';
import { binaryArray, binaryJsonb, BYTEA_OID, JSONB_OID } from '../binary-array.js';

/** What a route answers to senders; null fields mean the default answer. */
export interface RouteResponseConfig {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RouteRow {
  id: string;
  createdAt: Date;
  expiresAt: Date;
  response: RouteResponseConfig | null;
  /** Milliseconds the sender waits after its capture is stored (0: answered at once). */
  delayMs: number;
  verify: VerifyConfig | null;
}

/**
 * A stored capture with its position in the route's log (the pagination and SSE cursor). In a list,
 * a body longer than the inline bound is not read from the database: `bodyOmitted` is then true and
 * `body` empty (`storedBytes` says how many bytes are stored).
 */
export interface StoredCapture extends CapturedRecord {
  seq: number;
  storedBytes: number;
  bodyOmitted: boolean;
}

/** Which captures a list holds: newest first, older than `beforeSeq`, optionally filtered. */
export interface CaptureQuery {
  limit: number;
  beforeSeq?: number | undefined;
  /** Text in the path, query, a header value or the body. */
  text?: string | undefined;
  method?: string | undefined;
  /** Stop adding items once their estimated JSON size reaches this many bytes (at least one item). */
  pageBytes: number;
}

/** The rows of one page, newest first, with the running estimate of its JSON; `more` when older ones match. */
export interface CapturePlan {
  rows: Array<{ seq: number; runningBytes: number }>;
  more: boolean;
}

/** What one group commit did: which routes were live (their captures stored) and the new rows. */
export interface BatchResult {
  liveRoutes: Set<string>;
  /** How many captures were stored (those of live routes). */
  stored: number;
  /** Older captures deleted to keep routes within WEBHOOK_MAX_REQUESTS. */
  dropped: number;
}

const CAPTURE_COLUMNS = [
  'id',
  'route_id',
  'seq',
  'received_at',
  'method',
  'path',
  'query',
  'headers',
  'content_type',
  'size',
  'truncated',
  'body',
  'remote_address',
  'proxy_chain',
  'http_version',
  'signature',
] as const;

/** The list columns: the body only when it is at most `?` bytes (octet_length reads no TOAST data). */
const LIST_COLUMNS = `id, route_id, seq, received_at, method, path, query, headers, content_type, size, truncated, remote_address, proxy_chain, http_version, signature,
  octet_length(body) AS stored_bytes, CASE WHEN octet_length(body) <= ? THEN body END AS body`;

/**
 * What a list item is estimated to cost as JSON: an inline body appears as base64 and as text (and
 * maybe parsed), about 3× its bytes; the header lines as stored; a fixed part for the other fields.
 */
const ITEM_COST_SQL = `(CASE WHEN octet_length(body) <= ? THEN 3 * octet_length(body) ELSE 0 END + octet_length(headers::text) + 2 * octet_length(path) + 2 * octet_length(query) + 1024)`;

interface CaptureRowDb {
  stored_bytes?: number | string;
  id: string;
  route_id: string;
  seq: number;
  received_at: Date | string;
  method: string;
  path: string;
  query: string;
  headers: HeaderLine[] | string;
  content_type: string | null;
  size: number;
  truncated: boolean;
  body: Uint8Array | null;
  remote_address: string;
  proxy_chain: string | null;
  http_version: string;
  signature: StoredSignatureCheck | string | null;
}

interface RouteRowDb {
  id: string;
  created_at: Date | string;
  expires_at: Date | string;
  response_status: number | null;
  response_headers: Record<string, string> | string | null;
  response_body: string | null;
  response_delay_ms: number;
  verify: VerifyConfig | string | null;
}

/** SQL for webhook routes and captures; the same statements run on PostgreSQL and PGlite. */
export class WebhookRepository {
  /** `inlineBodyBytes`: a list item carries its body only up to this size. */
  constructor(
    private readonly knex: Knex,
    private readonly inlineBodyBytes = 64 * 1024,
  ) {}

  async insertRoute(route: RouteRow, trx: Knex = this.knex): Promise<void> {
    await trx('webhook_routes').insert({
      id: route.id,
      created_at: route.createdAt,
      expires_at: route.expiresAt,
      response_status: route.response?.status ?? null,
      response_headers: route.response ? JSON.stringify(route.response.headers) : null,
      response_body: route.response?.body ?? null,
      response_delay_ms: route.delayMs,
      verify: route.verify ? JSON.stringify(route.verify) : null,
    });
  }

  /** The route if it exists and has not expired. */
  async findLiveRoute(id: string, trx: Knex = this.knex): Promise<RouteRow | undefined> {
    const row = (await trx('webhook_routes')
      .select('id', 'created_at', 'expires_at', 'response_status', 'response_headers', 'response_body', 'response_delay_ms', 'verify')
      .where({ id })
      .andWhere('expires_at', '>', trx.fn.now())
      .first()) as RouteRowDb | undefined;
    return row ? toRoute(row) : undefined;
  }

  /** Deletes a route and (cascade) its captures; answers whether it existed. */
  async deleteRoute(id: string, trx: Knex = this.knex): Promise<boolean> {
    // `returning` because knex-pglite answers a bare delete with the driver result, not a count.
    const deleted = await trx('webhook_routes').where({ id }).delete().returning('id');
    if (deleted.length > 0) await trx.raw('SELECT pg_notify(?, ?)', [WEBHOOK_CHANNEL, encodeWebhookEvent({ kind: 'route_gone', routeId: id })]);
    return deleted.length > 0;
  }

  /**
   * Stores one group commit in ONE statement (one round trip, atomic, no explicit transaction):
   * adds the captures to each live route's count, inserts them (a route deleted or expired
   * meanwhile gets nothing stored, whatever a cache believed: the count's UPDATE finds no live row
   * for it) and NOTIFYs their sequence numbers (delivered on commit). Routes that went over
   * `maxPerRoute` are trimmed oldest-first right after.
   *
   * Sequence numbers in commit order. A route's `seq` is its event stream's id (SSE `id:`,
   * `Last-Event-ID`, the list cursor), so a capture must never commit after one of the same route
   * with a higher seq: a client that got the higher one and resumes from it would skip it. nextval
   * hands numbers out at insert, and batches of several processes commit in any order, so the
   * statement first locks the route rows (the count's UPDATE, which it needed anyway) and only then
   * inserts: the INSERT reads the UPDATE's output, so a row's nextval runs after its route row is
   * locked, and that lock is held until commit. A later batch of the same route waits for it and
   * takes its numbers after this commit; a batch that fails leaves a gap, never a late row. Per
   * route is enough: every stream, resume and cursor is one route's (docs/webhooks.md, "Live events
   * in commit order"). Tested in test/store/webhook-capture-order.test.ts.
   */
  async storeBatch(records: readonly CapturedRecord[], maxPerRoute: number): Promise<BatchResult> {
    // The captures go as 15 array parameters unnested in SQL: the statement text is the same for every
    // batch. Bodies and header lines travel as binary arrays (src/store/binary-array.ts): their bytes
    // as they are, where an array literal would need the body in hex and every quote in the header
    // JSON escaped, by JavaScript, and parsed back by PostgreSQL. The other columns are short text in
    // array literals; a value with no quote or backslash (ids, times) is quoted without a rewrite.
    const text = (element: (record: CapturedRecord) => string): string => `{${records.map(element).join(',')}}`;
    // In the order of the unnest below.
    const parameters: Array<string | Buffer> = [
      text((record) => quoted(record.id)),
      text((record) => quoted(record.routeId)),
      text((record) => quoted(record.receivedAt.toISOString())),
      text((record) => quoted(record.method)),
      text((record) => quoted(record.path)),
      text((record) => quoted(record.query)),
      binaryArray(
        JSONB_OID,
        records.map((record) => binaryJsonb(JSON.stringify(record.headers))),
      ),
      text((record) => nullableQuoted(record.contentType)),
      text((record) => String(record.size)),
      text((record) => String(record.truncated)),
      binaryArray(
        BYTEA_OID,
        records.map((record) => record.body),
      ),
      text((record) => quoted(record.remoteAddress)),
      text((record) => quoted(record.httpVersion)),
      text((record) => (record.signature ? quoted(JSON.stringify(record.signature)) : 'NULL')),
      text((record) => (record.proxyChain ? quoted(record.proxyChain.join(',')) : 'NULL')),
    ];
    const result = await this.knex.raw(
      `WITH v AS (
         SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::timestamptz[], ?::text[], ?::text[], ?::text[], ?::jsonb[], ?::text[], ?::int[], ?::boolean[], ?::bytea[], ?::text[], ?::text[], ?::jsonb[], ?::text[])
           WITH ORDINALITY AS v (id, route_id, received_at, method, path, query, headers, content_type, size, truncated, body, remote_address, http_version, signature, proxy_chain, ord)
       ), added AS (
         SELECT route_id, count(*)::int AS n FROM v GROUP BY route_id
       ), counted AS (
         UPDATE webhook_routes r SET request_count = r.request_count + added.n FROM added
         WHERE r.id = added.route_id AND r.expires_at > now()
         RETURNING r.id, r.request_count
       ), ins AS (
         INSERT INTO webhook_requests (id, route_id, received_at, method, path, query, headers, content_type, size, truncated, body, remote_address, http_version, signature, proxy_chain)
         SELECT v.id, v.route_id, v.received_at, v.method, v.path, v.query, v.headers, v.content_type, v.size, v.truncated, v.body, v.remote_address, v.http_version, v.signature, v.proxy_chain
         FROM v JOIN counted ON counted.id = v.route_id
         ORDER BY v.ord
         RETURNING route_id, seq
       ), stored AS (
         SELECT route_id, count(*)::int AS n, string_agg(seq::text, ',' ORDER BY seq) AS seqs FROM ins GROUP BY route_id
       ), notified AS (
         SELECT pg_notify(?, ${capturedEventSql('route_id', 'seqs')}) FROM stored
       )
       SELECT stored.route_id, stored.n, counted.request_count, (SELECT count(*) FROM notified) AS notified
       FROM stored JOIN counted ON counted.id = stored.route_id`,
      [...parameters, WEBHOOK_CHANNEL],
    );
    // One row per live route of the batch (not per capture: the answer is parsed in JavaScript).
    const rows = rowsOf<{ route_id: string; n: number; request_count: number | string }>(result);
    const liveRoutes = new Set<string>();
    const overCap = new Map<string, number>();
    let stored = 0;
    for (const row of rows) {
      liveRoutes.add(row.route_id);
      stored += Number(row.n);
      if (Number(row.request_count) > maxPerRoute) overCap.set(row.route_id, Number(row.request_count) - maxPerRoute);
    }
    let dropped = 0;
    for (const [routeId, excess] of overCap) {
      await this.evictOldest(routeId, excess);
      dropped += excess;
    }
    return { liveRoutes, stored, dropped };
  }

  /** Drops a route's `count` oldest captures and keeps its count right. */
  private async evictOldest(routeId: string, count: number): Promise<void> {
    await this.knex.raw(
      `WITH gone AS (
         DELETE FROM webhook_requests WHERE route_id = ? AND seq IN (
           SELECT seq FROM webhook_requests WHERE route_id = ? ORDER BY seq LIMIT ?
         ) RETURNING 1
       )
       UPDATE webhook_routes SET request_count = request_count - (SELECT count(*) FROM gone) WHERE id = ?`,
      [routeId, routeId, count, routeId],
    );
  }

  /**
   * Which captures one page holds, decided before any body is read: a route's captures newest first,
   * strictly older than `beforeSeq` when given, filtered by method and text, as sequence numbers with
   * the running estimate of the page's JSON (`runningBytes`, see ITEM_COST_SQL). Bounded in bytes
   * as well as rows: rows stop once the estimate passes `pageBytes` (at least one row). The bodies
   * are then read a chunk at a time (`capturesOfPage`) as the client takes the page. The scan is
   * bounded by the route's captures (at most WEBHOOK_MAX_REQUESTS). `more` tells whether older
   * matching captures exist.
   */
  async planCaptures(routeId: string, query: CaptureQuery, trx: Knex = this.knex): Promise<CapturePlan> {
    const conditions = ['route_id = ?'];
    const bindings: Array<string | number> = [routeId];
    if (query.beforeSeq !== undefined) {
      conditions.push('seq < ?');
      bindings.push(query.beforeSeq);
    }
    if (query.method !== undefined) {
      conditions.push('method = ?');
      bindings.push(query.method.toUpperCase());
    }
    if (query.text !== undefined) {
      // Path, query and header values case-insensitively; the body as bytes (its escape encoding
      // keeps ASCII as is, so ASCII letters match in any case and other bytes exactly).
      const pattern = `%${query.text.replace(/[\\%_]/g, '\\$&')}%`;
      conditions.push(
        `(path ILIKE ? OR query ILIKE ? OR EXISTS (SELECT 1 FROM jsonb_array_elements(headers) AS line WHERE line->>1 ILIKE ?) OR position(convert_to(?, 'UTF8') IN body) > 0 OR encode(body, 'escape') ILIKE ?)`,
      );
      bindings.push(pattern, pattern, pattern, query.text, `%${query.text.replace(/\\/g, '\\\\').replace(/[\\%_]/g, '\\$&')}%`);
    }
    const result = await trx.raw(
      `SELECT seq, sum(${ITEM_COST_SQL}) OVER (ORDER BY seq DESC) AS running_bytes
       FROM webhook_requests WHERE ${conditions.join(' AND ')}
       ORDER BY seq DESC LIMIT ?`,
      [this.inlineBodyBytes, ...bindings, query.limit + 1],
    );
    const rows: CapturePlan['rows'] = [];
    for (const row of rowsOf<{ seq: number | string; running_bytes: number | string }>(result)) {
      const runningBytes = Number(row.running_bytes);
      if (rows.length === query.limit || (rows.length > 0 && runningBytes > query.pageBytes)) return { rows, more: true };
      rows.push({ seq: Number(row.seq), runningBytes });
    }
    return { rows, more: false };
  }

  /** The captures of `seqs` (a chunk of a plan), newest first; large bodies left out as in every list. */
  async capturesOfPage(routeId: string, seqs: readonly number[], trx: Knex = this.knex): Promise<StoredCapture[]> {
    return (await this.capturesBySeq(routeId, seqs, trx)).reverse();
  }

  /** Captures by sequence number (what a NOTIFY names), oldest first; large bodies left out as in a list. */
  async capturesBySeq(routeId: string, seqs: readonly number[], trx: Knex = this.knex): Promise<StoredCapture[]> {
    if (seqs.length === 0) return [];
    const rows = (await trx('webhook_requests')
      .select(trx.raw(LIST_COLUMNS, [this.inlineBodyBytes]))
      .where({ route_id: routeId })
      .whereIn('seq', seqs as number[])
      .orderBy('seq', 'asc')) as CaptureRowDb[];
    return rows.map(toCapture);
  }

  /** Captures made after `afterSeq`, oldest first (an event stream resuming with Last-Event-ID); large bodies left out. */
  async capturesAfter(routeId: string, afterSeq: number, limit: number, trx: Knex = this.knex): Promise<StoredCapture[]> {
    const rows = (await trx('webhook_requests')
      .select(trx.raw(LIST_COLUMNS, [this.inlineBodyBytes]))
      .where({ route_id: routeId })
      .andWhere('seq', '>', afterSeq)
      .orderBy('seq', 'asc')
      .limit(limit)) as CaptureRowDb[];
    return rows.map(toCapture);
  }

  /** The highest sequence number stored for a route (0 when it has no captures): where a live stream starts. */
  async lastSeq(routeId: string, trx: Knex = this.knex): Promise<number> {
    const row = (await trx('webhook_requests').where({ route_id: routeId }).max({ seq: 'seq' }).first()) as { seq: number | string | null } | undefined;
    return Number(row?.seq ?? 0);
  }

  async findCapture(routeId: string, id: string, trx: Knex = this.knex): Promise<StoredCapture | undefined> {
    const row = (await trx('webhook_requests').select(CAPTURE_COLUMNS).where({ route_id: routeId, id }).first()) as CaptureRowDb | undefined;
    return row ? toCapture(row) : undefined;
  }

  /** Deletes one capture and keeps the route's count right; the route row is locked first, as in storeBatch. */
  async deleteCapture(routeId: string, id: string): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      const route = await trx.raw('SELECT id FROM webhook_routes WHERE id = ? FOR UPDATE', [routeId]);
      if (rowsOf(route).length === 0) return false;
      const deleted = await trx('webhook_requests').where({ route_id: routeId, id }).delete().returning('id');
      if (deleted.length > 0) await trx('webhook_routes').where({ id: routeId }).decrement('request_count', deleted.length);
      return deleted.length > 0;
    });
  }

  /** Up to `batch` expired routes, oldest expiry first (no lock: the deletes below decide). */
  async expiredRoutes(batch: number): Promise<string[]> {
    const result = await this.knex.raw('SELECT id FROM webhook_routes WHERE expires_at <= now() ORDER BY expires_at LIMIT ?', [batch]);
    return rowsOf<{ id: string }>(result).map((row) => row.id);
  }

  /**
   * Deletes at most `chunk` captures of expired routes in one statement (its own short transaction):
   * an expired route takes no new captures (storeBatch joins on live routes), so these rows only
   * shrink. Rows another sweeper holds are skipped (SKIP LOCKED). Answers how many were deleted.
   */
  async deleteExpiredCaptures(routeIds: readonly string[], chunk: number): Promise<number> {
    if (routeIds.length === 0) return 0;
    const result = await this.knex.raw(
      `DELETE FROM webhook_requests WHERE id IN (
         SELECT q.id FROM webhook_requests q JOIN webhook_routes r ON r.id = q.route_id AND r.expires_at <= now()
         WHERE q.route_id = ANY(?::uuid[]) LIMIT ? FOR UPDATE OF q SKIP LOCKED
       ) RETURNING 1`,
      [arrayLiteral(routeIds), chunk],
    );
    return rowsOf(result).length;
  }

  /**
   * Deletes expired routes (their captures already swept; any left behind by a concurrent sweeper
   * go with them) and announces each; answers the ids deleted. Claimed with SKIP LOCKED.
   */
  async deleteExpiredRoutes(routeIds: readonly string[]): Promise<string[]> {
    if (routeIds.length === 0) return [];
    return this.knex.transaction(async (trx) => {
      const claimed = await trx.raw('SELECT id FROM webhook_routes WHERE id = ANY(?::uuid[]) AND expires_at <= now() FOR UPDATE SKIP LOCKED', [
        arrayLiteral(routeIds),
      ]);
      const ids = rowsOf<{ id: string }>(claimed).map((row) => row.id);
      if (ids.length === 0) return [];
      await trx('webhook_routes').whereIn('id', ids).delete();
      await trx.raw('SELECT pg_notify(?, payload) FROM unnest(?::text[]) AS payload', [
        WEBHOOK_CHANNEL,
        arrayLiteral(ids.map((id) => encodeWebhookEvent({ kind: 'route_gone', routeId: id }))),
      ]);
      return ids;
    });
  }
}

/** Rows of a knex.raw result: `{rows}` on both pg and knex-pglite. */
function rowsOf<Row>(result: unknown): Row[] {
  return ((result as { rows?: Row[] }).rows ?? []) as Row[];
}

/** A PostgreSQL array literal of text elements, bound as one parameter on both drivers. */
function arrayLiteral(values: readonly string[]): string {
  return `{${values.map(quoted).join(',')}}`;
}

/** One quoted element of an array literal: `"` and `\` escaped (most values have neither, and are not rewritten). */
function quoted(value: string): string {
  return value.includes('"') || value.includes('\\') ? `"${value.replace(/["\\]/g, '\\$&')}"` : `"${value}"`;
}

/** A quoted element, or SQL NULL. */
function nullableQuoted(value: string | null): string {
  return value === null ? 'NULL' : quoted(value);
}

function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

function toRoute(row: RouteRowDb): RouteRow {
  const headers = typeof row.response_headers === 'string' ? (JSON.parse(row.response_headers) as Record<string, string>) : row.response_headers;
  return {
    id: row.id,
    createdAt: toDate(row.created_at),
    expiresAt: toDate(row.expires_at),
    response: row.response_status === null ? null : { status: row.response_status, headers: headers ?? {}, body: row.response_body ?? '' },
    delayMs: row.response_delay_ms ?? 0,
    verify: typeof row.verify === 'string' ? (JSON.parse(row.verify) as VerifyConfig) : row.verify,
  };
}

function toCapture(row: CaptureRowDb): StoredCapture {
  return {
    id: row.id,
    routeId: row.route_id,
    seq: Number(row.seq),
    receivedAt: toDate(row.received_at),
    method: row.method,
    path: row.path,
    query: row.query,
    headers: typeof row.headers === 'string' ? (JSON.parse(row.headers) as HeaderLine[]) : row.headers,
    contentType: row.content_type,
    size: row.size,
    truncated: row.truncated,
    body: row.body ? Buffer.from(row.body.buffer, row.body.byteOffset, row.body.byteLength) : Buffer.alloc(0),
    storedBytes: row.stored_bytes === undefined ? (row.body?.byteLength ?? 0) : Number(row.stored_bytes),
    bodyOmitted: row.body === null,
    remoteAddress: row.remote_address,
    proxyChain: row.proxy_chain ? row.proxy_chain.split(',') : undefined,
    httpVersion: row.http_version,
    signature: typeof row.signature === 'string' ? (JSON.parse(row.signature) as StoredSignatureCheck) : row.signature,
  };
}
