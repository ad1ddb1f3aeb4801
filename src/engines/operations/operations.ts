import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { IdempotencyRepository } from '../../store/repositories/idempotency-repository.js';
import { recordPendingKey, type PendingKey } from './idempotency.js';
import {
  OperationRepository,
  type FilteredOperationQuery,
  type FilteredOperations,
  type OperationQuery,
  type OperationRow,
} from '../../store/repositories/operation-repository.js';

/** What a service records when a mutation starts. */
/** Request headers recorded on an operation: lowercase name → values. */
export type RecordedHeaders = Record<string, string[]>;

/**
 * What a mutating call hands its service for the operation it records: the headers recorded on it
 * and the request's idempotency key, carried explicitly down to `begin`.
 */
export interface OperationCall {
  headers: RecordedHeaders;
  idempotency?: PendingKey;
}

export interface NewOperation {
  /** The api_service_name of the service (e.g. "compute"). */
  service: string;
  description: string;
  /** The principal id of the caller. */
  createdBy: string;
  resourceId: string;
  parentId: string;
  /** The packed request (see packOperationRequest): secrets already cleared. */
  request: Uint8Array;
  /** Lowercase header name → values, e.g. `x-resetmask` in canonical form. */
  requestHeaders?: RecordedHeaders;
  /** Background work that completes the operation; omit it (and pass `status`) for a synchronous one. */
  work?: { kind: string; payload?: Record<string, unknown> };
  /** The final status of a synchronous operation. */
  status?: Uint8Array;
  /** The idempotency key of the request (IdempotencyKeys.runAtomic), written in the same transaction. */
  idempotency?: PendingKey;
}

export const WORK_CHANNEL = 'cloud_operation_work';

/** A new operation id, `operation-<opaque>`. */
export function newOperationId(): string {
  return `operation-${randomBytes(10).toString('hex')}`;
}

/**
 * The operation store every cloud service shares: starting an operation (inside the caller's
 * transaction, so the resource change and its operation commit together), reading and listing.
 * Starting one wakes the local worker and, through NOTIFY, the other processes'.
 */
export class Operations {
  readonly repository: OperationRepository;
  private readonly keys: IdempotencyRepository;

  constructor(
    private readonly knex: Knex,
    private readonly onEnqueue: () => void = () => undefined,
  ) {
    this.repository = new OperationRepository(knex);
    this.keys = new IdempotencyRepository(knex);
  }

  /**
   * Records an operation in `trx`, with the idempotency key of the request (`operation.idempotency`,
   * from IdempotencyKeys.runAtomic through the service); its work becomes claimable when `trx` commits.
   */
  async begin(trx: Knex, operation: NewOperation): Promise<OperationRow> {
    const synchronous = operation.work === undefined;
    const id = newOperationId();
    // The request's idempotency key (if any) commits with the operation it answers.
    if (operation.idempotency) await recordPendingKey(this.keys, trx, operation.idempotency, id);
    const row = await this.repository.insert(
      {
        id,
        service: operation.service,
        description: operation.description,
        created_by: operation.createdBy,
        resource_id: operation.resourceId,
        parent_id: operation.parentId,
        request: operation.request,
        request_headers: operation.requestHeaders ?? {},
        status: operation.status ?? null,
        progress: null,
        kind: operation.work?.kind ?? null,
        payload: operation.work?.payload ?? {},
        state: synchronous ? 'done' : 'pending',
        finished: synchronous,
      },
      trx,
    );
    if (!synchronous) {
      await trx.raw('SELECT pg_notify(?, ?)', [WORK_CHANNEL, row.id]);
      // The local worker is woken after commit, when the row is visible to its claim.
      const maybeTrx = trx as Knex & { executionPromise?: Promise<unknown>; isTransaction?: boolean };
      if (maybeTrx.isTransaction && maybeTrx.executionPromise) {
        void maybeTrx.executionPromise.then(this.onEnqueue, () => undefined);
      } else {
        this.onEnqueue();
      }
    }
    return row;
  }

  get(id: string, trx: Knex = this.knex): Promise<OperationRow | undefined> {
    return this.repository.findById(id, trx);
  }

  list(query: OperationQuery, trx: Knex = this.knex): Promise<OperationRow[]> {
    return this.repository.list(query, trx);
  }

  /** One filtered page, newest first (OperationRepository.listFiltered). */
  listFiltered(query: FilteredOperationQuery, trx: Knex = this.knex): Promise<FilteredOperations> {
    return this.repository.listFiltered(query, trx);
  }

  /** The id of a running operation of the resource, if any (callers lock the resource first). */
  runningFor(resourceId: string, trx: Knex = this.knex): Promise<string | undefined> {
    return this.repository.findRunning(resourceId, trx);
  }
}
