import type { Knex } from 'knex';
import type { CapturedRecord, HeaderLine } from '../../engines/webhook-capture/index.js';

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
}

/** A stored capture with its position in the route's log (the pagination and SSE cursor). */
export interface StoredCapture extends CapturedRecord {
  seq: number;
}

/** What one group commit did: which routes were live (their captures stored) and the new rows. */
export interface BatchResult {
  liveRoutes: Set<string>;
  stored: Array<{ id: string; routeId: string; seq: number }>;
}

/** The NOTIFY channel that tells every server process about new captures and deleted routes. */
export const WEBHOOK_CHANNEL = 'webhook_events';
/** Sequence numbers per NOTIFY message: keeps payloads far below PostgreSQL's 8000-byte limit. */
const SEQS_PER_NOTIFY = 300;

const CAPTURE_COLUMNS = ['id', 'route_id', 'seq', 'received_at', 'method', 'path', 'query', 'headers', 'content_type', 'size', 'truncated', 'body', 'remote_address', 'http_version'] as const;

interface CaptureRowDb {
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
  body: Uint8Array;
  remote_address: string;
  http_version: string;
}

interface RouteRowDb {
  id: string;
  created_at: Date | string;
  expires_at: Date | string;
  response_status: number | null;
  response_headers: Record<string, string> | string | null;
  response_body: string | null;
}

/** SQL for webhook routes and captures; the same statements run on PostgreSQL and PGlite. */
export class WebhookRepository {
  constructor(private readonly knex: Knex) {}

  async insertRoute(route: RouteRow, trx: Knex = this.knex): Promise<void> {
    await trx('webhook_routes').insert({
      id: route.id,
      created_at: route.createdAt,
      expires_at: route.expiresAt,
      response_status: route.response?.status ?? null,
      response_headers: route.response ? JSON.stringify(route.response.headers) : null,
      response_body: route.response?.body ?? null,
    });
  }

  /** The route if it exists and has not expired. */
  async findLiveRoute(id: string, trx: Knex = this.knex): Promise<RouteRow | undefined> {
    const row = (await trx('webhook_routes')
      .select('id', 'created_at', 'expires_at', 'response_status', 'response_headers', 'response_body')
      .where({ id })
      .andWhere('expires_at', '>', trx.fn.now())
      .first()) as RouteRowDb | undefined;
    return row ? toRoute(row) : undefined;
  }

  /** Deletes a route and (cascade) its captures; answers whether it existed. */
  async deleteRoute(id: string, trx: Knex = this.knex): Promise<boolean> {
    // `returning` because knex-pglite answers a bare delete with the driver result, not a count.
    const deleted = await trx('webhook_routes').where({ id }).delete().returning('id');
    if (deleted.length > 0) await trx.raw('SELECT pg_notify(?, ?)', [WEBHOOK_CHANNEL, `d ${id}`]);
    return deleted.length > 0;
  }

  /**
   * Stores one group commit in one transaction: locks the live routes in id order (so processes
   * writing to the same routes never deadlock), counts the new rows on each route, inserts all
   * captures of live routes in one multi-row INSERT, evicts the oldest beyond `maxPerRoute`, and
   * NOTIFYs the new sequence numbers (delivered on commit). Captures of deleted or expired routes are
   * not stored: the route row decides at commit time, whatever a cache believed.
   */
  async storeBatch(records: readonly CapturedRecord[], maxPerRoute: number): Promise<BatchResult> {
    const perRoute = new Map<string, number>();
    for (const record of records) perRoute.set(record.routeId, (perRoute.get(record.routeId) ?? 0) + 1);
    const routeIds = [...perRoute.keys()].sort();
    return this.knex.transaction(async (trx) => {
      const counted = await trx.raw(
        `WITH locked AS MATERIALIZED (
           SELECT id FROM webhook_routes WHERE id = ANY(?::uuid[]) AND expires_at > now() ORDER BY id FOR UPDATE
         ), added AS (
           SELECT unnest(?::uuid[]) AS id, unnest(?::int[]) AS n
         )
         UPDATE webhook_routes r SET request_count = r.request_count + added.n
         FROM added JOIN locked ON locked.id = added.id
         WHERE r.id = added.id
         RETURNING r.id, r.request_count`,
        [arrayLiteral(routeIds), arrayLiteral(routeIds), arrayLiteral(routeIds.map((id) => String(perRoute.get(id))))],
      );
      const counts = new Map<string, number>((rowsOf<{ id: string; request_count: number }>(counted)).map((row) => [row.id, Number(row.request_count)]));
      const liveRoutes = new Set(counts.keys());
      const live = records.filter((record) => liveRoutes.has(record.routeId));
      if (live.length === 0) return { liveRoutes, stored: [] };

      const placeholders = live.map(() => '(?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?, ?, ?)').join(', ');
      const bindings: unknown[] = [];
      for (const record of live) {
        bindings.push(
          record.id,
          record.routeId,
          record.receivedAt,
          record.method,
          record.path,
          record.query,
          JSON.stringify(record.headers),
          record.contentType,
          record.size,
          record.truncated,
          record.body,
          record.remoteAddress,
          record.httpVersion,
        );
      }
      const inserted = await trx.raw(
        `INSERT INTO webhook_requests (id, route_id, received_at, method, path, query, headers, content_type, size, truncated, body, remote_address, http_version)
         VALUES ${placeholders} RETURNING id, route_id, seq`,
        bindings as Knex.RawBinding[],
      );
      const stored = rowsOf<{ id: string; route_id: string; seq: number }>(inserted).map((row) => ({ id: row.id, routeId: row.route_id, seq: Number(row.seq) }));

      for (const [routeId, count] of counts) {
        if (count <= maxPerRoute) continue;
        await trx.raw(
          `WITH gone AS (
             DELETE FROM webhook_requests WHERE route_id = ? AND seq IN (
               SELECT seq FROM webhook_requests WHERE route_id = ? ORDER BY seq LIMIT ?
             ) RETURNING 1
           )
           UPDATE webhook_routes SET request_count = request_count - (SELECT count(*) FROM gone) WHERE id = ?`,
          [routeId, routeId, count - maxPerRoute, routeId],
        );
      }

      const payloads: string[] = [];
      const seqsByRoute = new Map<string, number[]>();
      for (const row of stored) {
        const list = seqsByRoute.get(row.routeId) ?? [];
        list.push(row.seq);
        seqsByRoute.set(row.routeId, list);
      }
      for (const [routeId, seqs] of seqsByRoute) {
        for (let start = 0; start < seqs.length; start += SEQS_PER_NOTIFY) {
          payloads.push(`c ${routeId} ${seqs.slice(start, start + SEQS_PER_NOTIFY).join(',')}`);
        }
      }
      await trx.raw('SELECT pg_notify(?, payload) FROM unnest(?::text[]) AS payload', [WEBHOOK_CHANNEL, arrayLiteral(payloads)]);
      return { liveRoutes, stored };
    });
  }

  /** One page of a route's captures, newest first, strictly older than `beforeSeq` when given. */
  async listCaptures(routeId: string, limit: number, beforeSeq: number | undefined, trx: Knex = this.knex): Promise<StoredCapture[]> {
    const query = trx('webhook_requests').select(CAPTURE_COLUMNS).where({ route_id: routeId });
    if (beforeSeq !== undefined) query.andWhere('seq', '<', beforeSeq);
    const rows = (await query.orderBy('seq', 'desc').limit(limit)) as CaptureRowDb[];
    return rows.map(toCapture);
  }

  /** Captures by sequence number (what a NOTIFY names), oldest first. */
  async capturesBySeq(routeId: string, seqs: readonly number[], trx: Knex = this.knex): Promise<StoredCapture[]> {
    if (seqs.length === 0) return [];
    const rows = (await trx('webhook_requests').select(CAPTURE_COLUMNS).where({ route_id: routeId }).whereIn('seq', seqs as number[]).orderBy('seq', 'asc')) as CaptureRowDb[];
    return rows.map(toCapture);
  }

  /** Captures made after `afterSeq`, oldest first (an event stream resuming with Last-Event-ID). */
  async capturesAfter(routeId: string, afterSeq: number, limit: number, trx: Knex = this.knex): Promise<StoredCapture[]> {
    const rows = (await trx('webhook_requests').select(CAPTURE_COLUMNS).where({ route_id: routeId }).andWhere('seq', '>', afterSeq).orderBy('seq', 'asc').limit(limit)) as CaptureRowDb[];
    return rows.map(toCapture);
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

  /**
   * Deletes up to `batch` expired routes (and their captures). Routes are claimed with
   * `FOR UPDATE SKIP LOCKED`, so several processes sweeping at once share the work without waiting.
   */
  async sweepExpired(batch: number): Promise<string[]> {
    return this.knex.transaction(async (trx) => {
      const claimed = await trx.raw('SELECT id FROM webhook_routes WHERE expires_at <= now() ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED', [batch]);
      const ids = rowsOf<{ id: string }>(claimed).map((row) => row.id);
      if (ids.length === 0) return [];
      await trx('webhook_routes').whereIn('id', ids).delete();
      await trx.raw('SELECT pg_notify(?, payload) FROM unnest(?::text[]) AS payload', [WEBHOOK_CHANNEL, arrayLiteral(ids.map((id) => `d ${id}`))]);
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
  return `{${values.map((value) => `"${value.replace(/["\\]/g, '\\$&')}"`).join(',')}}`;
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
    body: Buffer.from(row.body.buffer, row.body.byteOffset, row.body.byteLength),
    remoteAddress: row.remote_address,
    httpVersion: row.http_version,
  };
}
