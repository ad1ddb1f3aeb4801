import { fromBinary } from '@bufbuild/protobuf';
import { StatusSchema } from '../../../generated/proto/google/rpc/status_pb.js';
import { AppError } from '../../errors.js';
import { authorize, type Principal } from '../../auth/principal.js';
import type { OperationWaiters, OperationWorker, Operations } from '../../engines/operations/index.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import { requireFields } from './named-resources.js';
import { DEFAULT_LIST_SCAN_ROWS } from '../../store/filtered-list.js';
import { operationListFilter, filteredScope } from './list-filter.js';
import { boundedPageFrom, decodePageToken, pageFrom, pageSize, type Page } from './paging.js';

/** OperationService.Wait without a timeout waits this long (docs/operations.md, "Wait"). */
const WAIT_DEFAULT_MS = 30_000;
/** The longest OperationService.Wait: a longer timeout is cut to it. */
const WAIT_MAX_MS = 60_000;
/** How long OperationService.Cancel waits for the holder of the work to stop it, before answering the operation still running. */
const CANCEL_WAIT_MS = 10_000;

/** How long a call may still wait: `timeoutMs`, within its deadline less a margin (a quarter, at most 1 s) to read and answer the operation. */
function withinDeadline(timeoutMs: number, deadlineMs: number | undefined): number {
  if (deadlineMs === undefined) return timeoutMs;
  return Math.max(0, Math.min(timeoutMs, deadlineMs - Math.min(1000, deadlineMs / 4)));
}

/** What a Wait or a Cancel call brings besides its request: its deadline and its abort. */
export interface CallLimits {
  /** Milliseconds left before the call's deadline, if it has one. */
  deadlineMs: number | undefined;
  signal: AbortSignal | undefined;
}

/**
 * OperationService's rules: an operation is visible on the endpoint of the service that started
 * it (`services`: undefined = every endpoint) to principals who may read its parent; it may be
 * cancelled by those who may mutate it (as the mutation that started it); waits are woken by the
 * process's notifications (OperationWaiters), never by polling.
 */
export class OperationQueries {
  constructor(
    private readonly operations: Operations,
    private readonly control: { worker: OperationWorker; waiters: OperationWaiters },
    /** At most this many rows examined per filtered List page (LIST_FILTER_SCAN_ROWS). */
    private readonly listScanRows = DEFAULT_LIST_SCAN_ROWS,
  ) {}

  async get(principal: Principal, id: string, services: readonly string[] | undefined): Promise<OperationRow> {
    requireFields({ id });
    return visible(principal, id, await this.operations.get(id), services);
  }

  async list(
    principal: Principal,
    request: { resourceId: string; pageSize: bigint; pageToken: string; filter: string },
    services: readonly string[] | undefined,
  ): Promise<Page<OperationRow>> {
    requireFields({ resource_id: request.resourceId });
    const size = pageSize(request.pageSize);
    const filter = operationListFilter(request.filter);
    const scope = filteredScope(`operations:${request.resourceId}:${services?.join(',') ?? '*'}`, request.filter);
    const before = decodePageToken(scope, request.pageToken);
    if (filter === undefined) {
      const rows = await this.operations.list({ resourceId: request.resourceId, services, beforeSeq: before, limit: size + 1 });
      const page = pageFrom(rows, size, scope);
      for (const parentId of new Set(page.items.map((row) => row.parent_id))) authorize(principal, 'read', parentId);
      return page;
    }
    // Authorized before the filter runs, on the resource's newest operation (all of a resource's
    // operations share its parent): a filter must not tell a stranger whether something matches.
    const [newest] = await this.operations.list({ resourceId: request.resourceId, services, limit: 1 });
    if (newest === undefined) return { items: [], nextPageToken: '' };
    authorize(principal, 'read', newest.parent_id);
    const result = await this.operations.listFiltered({
      resourceId: request.resourceId,
      services,
      beforeSeq: before,
      limit: size + 1,
      filter,
      scanRows: this.listScanRows,
    });
    return boundedPageFrom(result.rows, size, scope, (row) => row, result.resumeAfter);
  }

  /**
   * The operation once it completed, or as it is when `timeoutMs` (0: the default 30 s, at most
   * 60 s) or the call's deadline comes first. The wait is registered before the first read, so a
   * completion in between wakes it.
   */
  async wait(
    principal: Principal,
    request: { id: string; timeoutMs: number },
    services: readonly string[] | undefined,
    limits: CallLimits,
  ): Promise<OperationRow> {
    requireFields({ id: request.id });
    if (!(request.timeoutMs >= 0)) {
      throw new AppError('invalid_argument', 'timeout must not be negative', { violations: [{ field: 'timeout', message: 'must not be negative' }] });
    }
    const timeoutMs = withinDeadline(Math.min(request.timeoutMs === 0 ? WAIT_DEFAULT_MS : request.timeoutMs, WAIT_MAX_MS), limits.deadlineMs);
    return this.waitFor(principal, request.id, services, timeoutMs, limits.signal);
  }

  /**
   * Cancels a running operation (docs/operations.md, "Cancel"): undone here when no process holds
   * its work, else the holder is asked and this call waits (up to 10 s, within its deadline) for it
   * to complete CANCELLED. A finished operation → FAILED_PRECONDITION, except a CANCELLED one,
   * answered again (cancelling twice answers the same).
   */
  async cancel(principal: Principal, id: string, services: readonly string[] | undefined, limits: CallLimits): Promise<OperationRow> {
    requireFields({ id });
    const outcome = await this.control.worker.cancel(id, (target) => {
      if (services !== undefined && !services.includes(target.service)) throw notFound(id);
      authorize(principal, 'mutate', target.parent_id);
    });
    if (!outcome) throw notFound(id);
    if (outcome.kind === 'finished') {
      const row = await this.get(principal, id, services);
      if (row.status && statusCode(row) === CANCELLED) return row;
      throw new AppError('failed_precondition', `operation ${id} has already finished; only a running operation can be cancelled`, {
        resourceId: id,
        detail: { kind: 'bad_resource_state' },
      });
    }
    if (outcome.kind === 'cancelled') return this.get(principal, id, services);
    // Waiting for the holder is a courtesy: with every wait slot taken, the request stands and the
    // operation is answered still running.
    if (this.control.waiters.full) return this.get(principal, id, services);
    return this.waitFor(principal, id, services, withinDeadline(CANCEL_WAIT_MS, limits.deadlineMs), limits.signal);
  }

  private async waitFor(principal: Principal, id: string, services: readonly string[] | undefined, timeoutMs: number, signal: AbortSignal | undefined) {
    const ticket = this.control.waiters.add(id);
    try {
      const row = visible(principal, id, await this.control.waiters.read(id), services);
      if (row.status || timeoutMs <= 0) return row;
      const done = await ticket.until(timeoutMs, signal);
      return done ?? (await this.operations.get(id)) ?? row;
    } finally {
      ticket.release();
    }
  }
}

/** google.rpc.Code CANCELLED. */
const CANCELLED = 1;

function statusCode(row: OperationRow): number {
  return row.status ? fromBinary(StatusSchema, row.status).code : 0;
}

/** The operation if the principal may read it on this endpoint; NOT_FOUND or PERMISSION_DENIED otherwise. */
function visible(principal: Principal, id: string, row: OperationRow | undefined, services: readonly string[] | undefined): OperationRow {
  if (!row || (services !== undefined && !services.includes(row.service))) throw notFound(id);
  authorize(principal, 'read', row.parent_id);
  return row;
}

function notFound(id: string): AppError {
  return new AppError('not_found', `operation ${id} not found`, { resourceId: id });
}
