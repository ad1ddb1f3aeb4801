import type { Knex } from 'knex';
import { affectedRows } from '../affected-rows.js';
import type { Filter } from '../../engines/filter/index.js';
import { columnFilterSql } from '../filtered-list.js';

/** An operation as stored: the client-visible fields plus its background work. */
export interface OperationRow {
  id: string;
  seq: number;
  service: string;
  description: string;
  created_by: string;
  resource_id: string;
  parent_id: string;
  request: Uint8Array;
  request_headers: Record<string, string[]>;
  status: Uint8Array | null;
  progress: Uint8Array | null;
  created_at: Date;
  finished_at: Date | null;
  kind: string | null;
  payload: Record<string, unknown>;
  state: 'pending' | 'running' | 'done';
}

/** A claimed piece of background work. */
export interface ClaimedWorkRow {
  id: string;
  kind: string;
  payload: Record<string, unknown>;
  resource_id: string;
  parent_id: string;
  attempts: number;
}

export interface OperationQuery {
  resourceId?: string;
  parentId?: string;
  /** Only operations started by these services; undefined means every service. */
  services?: readonly string[] | undefined;
  /** Only operations older than this `seq` (keyset pagination, newest first). */
  beforeSeq?: number | undefined;
  limit: number;
}

/** A filtered page of operations (docs/cloud-api.md, "List filters"). */
export interface FilteredOperationQuery extends OperationQuery {
  filter: Filter;
  /** At most this many candidate rows are examined (LIST_FILTER_SCAN_ROWS). */
  scanRows: number;
}

/** A filtered page's rows and, when it stopped at its scan bound short of a page, the `seq` to resume after. */
export interface FilteredOperations {
  rows: OperationRow[];
  resumeAfter: number | undefined;
}

/**
 * The operation's filterable fields (OPERATION_FILTER_FIELDS in src/services/cloud/list-filter.ts)
 * as SQL over a row of `operations` aliased `candidates`, NULL when unset. `status.code` is read
 * from the stored google.rpc.Status: its field 1 (tag byte 8) is a one-byte varint for every gRPC
 * code (0–16), and a code 0 is not encoded at all.
 */
const FILTER_COLUMNS: Readonly<Record<string, string>> = {
  id: 'candidates.id',
  description: 'candidates.description',
  createdAt: 'candidates.created_at',
  createdBy: 'candidates.created_by',
  finishedAt: 'candidates.finished_at',
  resourceId: 'candidates.resource_id',
  status: 'candidates.status',
  'status.code': `(CASE WHEN candidates.status IS NULL THEN NULL
    WHEN length(candidates.status) >= 2 AND get_byte(candidates.status, 0) = 8 THEN get_byte(candidates.status, 1) ELSE 0 END)`,
};

/** Whether every match must be running (`NOT status:*` in the filter's top-level AND): then the partial indexes of running operations serve it. */
function requiresRunning(filter: Filter): boolean {
  if (filter.kind === 'and') return filter.terms.some(requiresRunning);
  return filter.kind === 'not' && filter.term.kind === 'present' && filter.term.path.length === 1 && filter.term.path[0] === 'status';
}

const COLUMNS = [
  'id',
  'seq',
  'service',
  'description',
  'created_by',
  'resource_id',
  'parent_id',
  'request',
  'request_headers',
  'status',
  'progress',
  'created_at',
  'finished_at',
  'kind',
  'payload',
  'state',
] as const;

/** SQL for operations and their work items; every method takes an optional transaction. */
export class OperationRepository {
  constructor(private readonly knex: Knex) {}

  async insert(row: Omit<OperationRow, 'seq' | 'created_at' | 'finished_at'> & { finished: boolean }, trx: Knex = this.knex): Promise<OperationRow> {
    const { finished, ...values } = row;
    const [created] = await trx('operations')
      .insert({
        ...values,
        request: Buffer.from(values.request),
        status: values.status ? Buffer.from(values.status) : null,
        progress: values.progress ? Buffer.from(values.progress) : null,
        request_headers: JSON.stringify(values.request_headers),
        payload: JSON.stringify(values.payload),
        finished_at: finished ? trx.fn.now() : null,
      })
      .returning(COLUMNS);
    return normalize(created);
  }

  async findById(id: string, trx: Knex = this.knex): Promise<OperationRow | undefined> {
    const row = await trx('operations').select(COLUMNS).where({ id }).first();
    return row ? normalize(row) : undefined;
  }

  /** Newest first, `limit` rows at most. */
  async list(query: OperationQuery, trx: Knex = this.knex): Promise<OperationRow[]> {
    const builder = trx('operations').select(COLUMNS).orderBy('seq', 'desc').limit(query.limit);
    if (query.resourceId !== undefined) builder.where('resource_id', query.resourceId);
    if (query.parentId !== undefined) builder.where('parent_id', query.parentId);
    if (query.services !== undefined) builder.whereIn('service', [...query.services]);
    if (query.beforeSeq !== undefined) builder.where('seq', '<', query.beforeSeq);
    return (await builder).map(normalize);
  }

  /**
   * One keyset page (newest first) of the operations `query` selects that match its filter: the
   * candidates below the cursor in `seq` order descending, at most `scanRows` of them, then the
   * filter over those, `limit` rows at most. As src/store/filtered-list.ts: a page that examined
   * `scanRows` candidates without filling up answers where the walk stopped (`resumeAfter`, the
   * `seq` of the last one examined). A filter that requires running operations walks the partial
   * indexes of running operations (`operations_running_resource`, `operations_running_parent`).
   */
  async listFiltered(query: FilteredOperationQuery, trx: Knex = this.knex): Promise<FilteredOperations> {
    const running = requiresRunning(query.filter);
    const walk = (): Knex.QueryBuilder => {
      const builder = trx('operations').orderBy('seq', 'desc');
      if (query.resourceId !== undefined) builder.where('resource_id', query.resourceId);
      if (query.parentId !== undefined) builder.where('parent_id', query.parentId);
      if (query.services !== undefined) builder.whereIn('service', [...query.services]);
      // Written in the SQL, not bound, so the planner matches the partial indexes' predicate.
      if (running) builder.whereRaw('status IS NULL');
      if (query.beforeSeq !== undefined) builder.where('seq', '<', query.beforeSeq);
      return builder;
    };
    const predicate = columnFilterSql(query.filter, FILTER_COLUMNS);
    const rows = await trx
      .from(walk().select(COLUMNS).limit(query.scanRows).as('candidates'))
      .select(COLUMNS.map((column) => `candidates.${column}`))
      .whereRaw(predicate.sql, predicate.bindings)
      .orderBy('candidates.seq', 'desc')
      .limit(query.limit);
    const page = (rows as Array<Record<string, unknown>>).map(normalize);
    if (page.length >= query.limit) return { rows: page, resumeAfter: undefined };
    const cut = (await walk()
      .select('seq')
      .offset(query.scanRows - 1)
      .limit(1)
      .first()) as { seq: string | number } | undefined;
    return { rows: page, resumeAfter: cut === undefined ? undefined : Number(cut.seq) };
  }

  /** The id of a running operation of the resource, if any. */
  async findRunning(resourceId: string, trx: Knex = this.knex): Promise<string | undefined> {
    const row = await trx('operations').select('id').where('resource_id', resourceId).whereNull('status').orderBy('seq').first();
    return row?.id;
  }

  /** Open work by state (pending, running), for the queue-depth metric; uses the partial index of open work. */
  async countOpenByState(trx: Knex = this.knex): Promise<Record<string, number>> {
    const rows: Array<{ state: string; count: number | string }> = await trx('operations')
      .select('state')
      .count({ count: '*' })
      // Written in the SQL, not bound, so a generic plan can use the partial index operations_open_work.
      .whereRaw("state <> 'done'")
      .groupBy('state');
    return Object.fromEntries(rows.map((row) => [row.state, Number(row.count)]));
  }

  /**
   * Claims the oldest open work item nobody holds (or whose holder's lease ran out). SKIP LOCKED
   * lets several processes claim at once without waiting on each other.
   */
  async claim(workerId: string, leaseMs: number, trx: Knex = this.knex): Promise<ClaimedWorkRow | undefined> {
    const result = await trx.raw(
      `UPDATE operations SET state = 'running', claimed_by = ?, claimed_until = now() + (?::int * interval '1 millisecond'), attempts = attempts + 1
       WHERE id = (
         SELECT id FROM operations
         WHERE state <> 'done' AND kind IS NOT NULL AND (claimed_until IS NULL OR claimed_until < now())
         ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED
       )
       RETURNING id, kind, payload, resource_id, parent_id, attempts`,
      [workerId, leaseMs],
    );
    const row = (result.rows as ClaimedWorkRow[])[0];
    return row ? { ...row, payload: row.payload ?? {} } : undefined;
  }

  /**
   * Extends a claim and, when given, records the work's progress, in one statement: `lost` when the
   * claim is no longer this worker's (the lease ran out and another took it), `cancel` when a cancel
   * was requested (OperationService.Cancel), else `held`.
   */
  async renew(id: string, workerId: string, leaseMs: number, progress?: Uint8Array, trx: Knex = this.knex): Promise<'held' | 'lost' | 'cancel'> {
    const rows: Array<{ cancel_requested_at: Date | string | null }> = await trx('operations')
      .where({ id, claimed_by: workerId, state: 'running' })
      .update({
        claimed_until: trx.raw("now() + (?::int * interval '1 millisecond')", [leaseMs]),
        ...(progress ? { progress: Buffer.from(progress) } : {}),
      })
      .returning(['cancel_requested_at']);
    const row = rows[0];
    if (!row) return 'lost';
    return row.cancel_requested_at !== null ? 'cancel' : 'held';
  }

  /**
   * Locks a claimed item for completion: undefined when another worker holds it now, else whether a
   * cancel was requested (then the work is undone instead of completed).
   */
  async lockClaimed(id: string, workerId: string, trx: Knex): Promise<{ cancelRequested: boolean } | undefined> {
    const row = await trx('operations').select('cancel_requested_at').where({ id, claimed_by: workerId, state: 'running' }).forUpdate().first();
    return row === undefined ? undefined : { cancelRequested: row.cancel_requested_at !== null };
  }

  /**
   * Completes an operation. Its payload (what the work needed, e.g. the resource as it was before
   * the mutation, to undo it) is dropped: only running work needs it.
   */
  async finish(id: string, status: Uint8Array, trx: Knex = this.knex, progress?: Uint8Array): Promise<void> {
    await trx('operations')
      .where({ id })
      .update({
        state: 'done',
        status: Buffer.from(status),
        finished_at: trx.fn.now(),
        claimed_by: null,
        claimed_until: null,
        payload: '{}',
        ...(progress ? { progress: Buffer.from(progress) } : {}),
      });
  }

  /**
   * Locks an operation for OperationService.Cancel (waiting for a completion in progress, so the
   * answer is what that completion left): its status, and whether its work is held by a live claim.
   */
  async lockForCancel(id: string, trx: Knex): Promise<CancelTarget | undefined> {
    const row = await trx('operations')
      .select('id', 'service', 'kind', 'payload', 'resource_id', 'parent_id', 'attempts', 'status', 'cancel_requested_at')
      .select(trx.raw("(state = 'running' AND claimed_until IS NOT NULL AND claimed_until >= now()) AS held"))
      .where({ id })
      .forUpdate()
      .first();
    if (!row) return undefined;
    return {
      id: row.id,
      service: row.service,
      kind: row.kind,
      payload: row.payload ?? {},
      resource_id: row.resource_id,
      parent_id: row.parent_id,
      attempts: row.attempts,
      status: bytes(row.status),
      held: row.held === true,
      cancelRequested: row.cancel_requested_at !== null,
    };
  }

  /** Records a cancel request (the first one's time is kept). */
  async requestCancel(id: string, trx: Knex = this.knex): Promise<void> {
    await trx('operations')
      .where({ id })
      .update({ cancel_requested_at: trx.raw('coalesce(cancel_requested_at, now())') });
  }

  /** The operations among `ids` that exist, in one statement (the waiters of OperationService.Wait). */
  async findByIds(ids: readonly string[], trx: Knex = this.knex): Promise<OperationRow[]> {
    if (ids.length === 0) return [];
    return (
      await trx('operations')
        .select(COLUMNS)
        .whereIn('id', [...ids])
    ).map(normalize);
  }

  /** Gives back every claim of a worker that stops, so another process picks the work up at once. */
  async release(workerId: string, trx: Knex = this.knex): Promise<number> {
    return affectedRows(
      await trx('operations').where({ claimed_by: workerId, state: 'running' }).update({ state: 'pending', claimed_by: null, claimed_until: null }),
    );
  }

  /**
   * One bounded step of retention: looks at the next `limit` completed operations finished before
   * `cutoff`, in `(finished_at, id)` order after `after`, and deletes those no idempotency key created
   * since `keysSince` still answers with. Running operations (status NULL) are outside the index and
   * never touched; rows another process is deleting are skipped (SKIP LOCKED). The answer's `last` is
   * where the next step starts, so rows kept for their key are never read twice.
   */
  async deleteFinishedBatch(
    range: { cutoff: Date; keysSince: Date; after: RetentionCursor | undefined },
    limit: number,
    trx: Knex = this.knex,
  ): Promise<RetentionBatch> {
    const after = range.after ?? { finishedAt: '-infinity', id: '' };
    const result = await trx.raw(
      `WITH batch AS (
         SELECT id, finished_at FROM operations
         WHERE status IS NOT NULL AND finished_at < ? AND (finished_at, id) > (?::timestamptz, ?)
         ORDER BY finished_at, id LIMIT ?
         FOR UPDATE SKIP LOCKED
       ), gone AS (
         DELETE FROM operations o USING batch b
         WHERE o.id = b.id AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.operation_id = b.id AND k.created_at >= ?)
         RETURNING o.id
       ), last AS (
         SELECT finished_at::text AS finished_at, id FROM batch ORDER BY finished_at DESC, id DESC LIMIT 1
       )
       SELECT (SELECT count(*) FROM batch)::int AS scanned, (SELECT count(*) FROM gone)::int AS deleted,
              (SELECT finished_at FROM last) AS last_finished_at, (SELECT id FROM last) AS last_id`,
      [range.cutoff, after.finishedAt, after.id, limit, range.keysSince],
    );
    const row = (result.rows as Array<{ scanned: number; deleted: number; last_finished_at: string | null; last_id: string | null }>)[0];
    const last = row?.last_finished_at && row.last_id ? { finishedAt: row.last_finished_at, id: row.last_id } : undefined;
    return { scanned: row?.scanned ?? 0, deleted: row?.deleted ?? 0, last };
  }
}

/** An operation as OperationService.Cancel sees it, locked. */
export interface CancelTarget extends Omit<ClaimedWorkRow, 'kind'> {
  /** The api_service_name of the service that started it. */
  service: string;
  /** NULL for an operation recorded complete (it has no work). */
  kind: string | null;
  status: Uint8Array | null;
  /** A live claim holds its work: only that worker may undo it. */
  held: boolean;
  cancelRequested: boolean;
}

/** Where a retention sweep stands: `finished_at` as PostgreSQL prints it (microseconds kept), then id. */
export interface RetentionCursor {
  finishedAt: string;
  id: string;
}

export interface RetentionBatch {
  /** Completed operations looked at (deleted or kept for their idempotency key). */
  scanned: number;
  deleted: number;
  last: RetentionCursor | undefined;
}

function bytes(value: unknown): Uint8Array | null {
  if (value === null || value === undefined) return null;
  return new Uint8Array(Buffer.from(value as Uint8Array));
}

function normalize(row: Record<string, unknown>): OperationRow {
  return {
    ...(row as unknown as OperationRow),
    seq: Number(row.seq),
    request: bytes(row.request) ?? new Uint8Array(),
    status: bytes(row.status),
    progress: bytes(row.progress),
    created_at: new Date(row.created_at as string | Date),
    finished_at: row.finished_at ? new Date(row.finished_at as string | Date) : null,
  };
}
