import { randomBytes } from 'node:crypto';
import { create, fromBinary, toBinary, type Message, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { GenMessage } from '@bufbuild/protobuf/codegenv2';
import type { Knex } from 'knex';
import type { ResourceMetadata } from '../../../generated/proto/cloud/common/v1/metadata_pb.js';
import { AppError, type Violation } from '../../errors.js';
import { authorize, type Principal } from '../../auth/principal.js';
import { okStatus, type Operations, type PendingKey, type RecordedHeaders } from '../../engines/operations/index.js';
import { printResetMask, type ResetMask } from '../../engines/reset-mask/index.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import type { ResourceRepository, ResourceRow } from '../../store/repositories/resource-repository.js';
import { resourceDocument } from '../../store/resource-document.js';
import { onUniqueViolation } from '../../store/unique-violation.js';
import { filteredScope, listFilter, operationListFilter } from './list-filter.js';
import { boundedPageFrom, decodePageToken, pageFrom, pageSize, type Page } from './paging.js';
import { replaceWithResetMask } from './resource-update.js';

/** A resource with the cloud API's `{metadata, spec, status}` shape. */
export type NamedResource = Message & { metadata?: ResourceMetadata; spec?: Message; status?: Message };

/** A List request of a parent's resources (or of their operations). */
export interface ParentListRequest {
  parentId: string;
  pageSize: bigint;
  pageToken: string;
  filter: string;
}

/** Decides whether a parent id names an existing parent (holding it until the transaction ends). */
export type ParentCheck = (parentId: string, trx: Knex) => Promise<boolean>;

/** The id of a project: the parent of instances, service accounts and keys. */
export const PROJECT_ID_PATTERN = /^project-[A-Za-z0-9]{1,64}$/;

const NAME_MAX = 128;

/** What a mutation records as its Operation. */
export interface OperationInput {
  description: string;
  /** The packed request (see packOperationRequest). */
  request: Uint8Array;
  headers: RecordedHeaders;
  /** The request's idempotency key, written with the operation (Operations.begin). */
  idempotency?: PendingKey;
  /**
   * The kind of background work that completes the operation (compute instances). Without it the
   * change is already done and the operation is recorded complete (IAM).
   */
  work?: string;
  /**
   * The resource as stored before the mutation, kept in the work's payload while it runs so that a
   * cancelled operation can put it back (set by `mutate` for mutations with background work).
   */
  previous?: Uint8Array;
}

/** The resource before a mutation, from a work payload (see OperationInput.previous); undefined for a Create. */
export function previousOf(payload: Record<string, unknown>): Uint8Array | undefined {
  return typeof payload.previous === 'string' ? new Uint8Array(Buffer.from(payload.previous, 'base64')) : undefined;
}

/** What differs between kinds of named resources; everything else is shared. */
export interface NamedResourceKind<T extends NamedResource> {
  schema: GenMessage<T>;
  /** The api_service_name of the service: its operations are served on that endpoint. */
  service: string;
  /** The id prefix: ids are `<idPrefix>-<20 hex>`. */
  idPrefix: string;
  /** The resource in messages ("instance", "project", "service account"). */
  label: string;
  /** The parent in messages, also its id prefix ("tenant", "project"). */
  parentLabel: string;
  parentIdPattern: RegExp;
  repository: ResourceRepository;
  /** The status of a new resource. */
  initialStatus(): MessageInitShape<GenMessage<T>>['status'];
  parentExists: ParentCheck;
  /**
   * Whose project decides a read: the resource itself (a project: a service account may read its
   * own project) or its parent (an instance or service account: readable inside its project).
   */
  readScope: 'self' | 'parent';
  /** What page tokens are bound to; `<idPrefix>:<parent id>` unless set (kept so that issued tokens stay valid). */
  pageScope?(parentId: string): string;
  /** Rules on the spec, checked on create and on the result of an update. */
  specViolations?(spec: T['spec']): Violation[];
  /** At most `limit` resources per parent; creations under one parent serialize to count them. */
  quota?: { limit: number; name: string; plural: string };
  /**
   * Whether a mutation must wait for the resource's running operation (mutations whose background
   * work is still changing the resource): ABORTED with operation_conflict until it completes.
   */
  oneOperationAtATime?: boolean;
  /** Refuses a delete that would orphan something (a project with accounts or instances). */
  beforeDelete?(row: ResourceRow, trx: Knex): Promise<void>;
  /**
   * Runs in the transaction of every create and mutation, after the row is written: what other
   * resources keep about this one (the disks an instance attaches). `next` is undefined when the row
   * was removed, `previous` on a create. Throwing rolls the change back.
   */
  afterWrite?(trx: Knex, next: T | undefined, previous: T | undefined): Promise<void>;
  /** At most this many rows examined per filtered List page (LIST_FILTER_SCAN_ROWS). */
  listScanRows: number;
}

/** The outcome of a change to a stored resource: its next state (saved) or its removal, and the operation. */
export interface Mutation<T> {
  next: T | 'deleted';
  operation: OperationInput;
}

/**
 * The rules every named cloud resource shares (contracts/proto/cloud, docs/cloud-api.md): ids `<kind>-<opaque>`, names
 * unique per parent (ALREADY_EXISTS), keyset paging, `resource_version` bumped on every change and
 * checked on Update, Update as full replace under the reset mask, and every mutation recorded as an
 * Operation in the same transaction as the change.
 */
export class NamedResources<T extends NamedResource> {
  constructor(
    private readonly knex: Knex,
    private readonly operations: Operations,
    readonly kind: NamedResourceKind<T>,
  ) {}

  get repository(): ResourceRepository {
    return this.kind.repository;
  }

  decode(row: ResourceRow): T {
    return fromBinary(this.kind.schema, row.data);
  }

  /** The project whose rules decide access to a stored resource. */
  scopeOf(row: ResourceRow, access: 'read' | 'mutate'): string {
    return access === 'read' && this.kind.readScope === 'self' ? row.id : row.parent_id;
  }

  async get(principal: Principal, id: string): Promise<T> {
    requireFields({ id });
    const row = await this.repository.findById(id);
    if (!row) throw this.notFound(id);
    authorize(principal, 'read', this.scopeOf(row, 'read'));
    return this.decode(row);
  }

  async getByName(principal: Principal, parentId: string, name: string): Promise<T> {
    requireFields({ parent_id: parentId, name });
    if (this.kind.readScope === 'parent') authorize(principal, 'read', parentId);
    const row = await this.repository.findByName(parentId, name);
    if (!row) throw new AppError('not_found', `no ${this.kind.label} named "${name}" in ${parentId}`, { resourceId: name });
    authorize(principal, 'read', this.scopeOf(row, 'read'));
    return this.decode(row);
  }

  /**
   * One page of a parent's resources, those matching `filter` when one is given (docs/cloud-api.md,
   * "List filters"). When resources are their own read scope (projects), a service account's list
   * holds only what it may read (its own project) instead of failing.
   */
  async list(principal: Principal, request: ParentListRequest): Promise<Page<T>> {
    requireFields({ parent_id: request.parentId });
    const filter = listFilter(request.filter, this.kind.schema);
    const size = pageSize(request.pageSize);
    const scope = filteredScope(this.kind.pageScope?.(request.parentId) ?? `${this.kind.idPrefix}:${request.parentId}`, request.filter);
    const after = decodePageToken(scope, request.pageToken);
    let only: string[] | undefined;
    if (this.kind.readScope === 'parent') authorize(principal, 'read', request.parentId);
    else if (principal.kind === 'service-account') only = [principal.projectId];
    if (filter === undefined) {
      const rows = await this.repository.list(request.parentId, after, size + 1, this.knex, only);
      return pageFrom(rows, size, scope, (row) => this.decode(row));
    }
    const { rows, resumeAfter } = await this.repository.listFiltered({
      parentId: request.parentId,
      afterSeq: after,
      limit: size + 1,
      filter,
      scanRows: this.kind.listScanRows,
      ...(only === undefined ? {} : { ids: only }),
    });
    return boundedPageFrom(rows, size, scope, (row) => this.decode(row), resumeAfter);
  }

  /**
   * One page of the operations of a parent's resources of this service (ListOperationsByParent),
   * newest first, those matching `filter` when one is given.
   */
  async listOperationsByParent(principal: Principal, request: ParentListRequest): Promise<Page<OperationRow>> {
    requireFields({ parent_id: request.parentId });
    const size = pageSize(request.pageSize);
    const filter = operationListFilter(request.filter);
    const scope = filteredScope(`operations-by-parent:${request.parentId}`, request.filter);
    const before = decodePageToken(scope, request.pageToken);
    authorize(principal, 'read', request.parentId);
    const query = { parentId: request.parentId, services: [this.kind.service], beforeSeq: before, limit: size + 1 };
    if (filter === undefined) return pageFrom(await this.operations.list(query), size, scope);
    const result = await this.operations.listFiltered({ ...query, filter, scanRows: this.kind.listScanRows });
    return boundedPageFrom(result.rows, size, scope, (row) => row, result.resumeAfter);
  }

  /** Creates the resource and starts (or records) its operation in one transaction. */
  async create(principal: Principal, input: { metadata?: ResourceMetadata; spec?: T['spec'] }, operation: OperationInput): Promise<OperationRow> {
    const parentId = input.metadata?.parentId ?? '';
    const name = input.metadata?.name ?? '';
    const violations = [...requiredViolations({ 'metadata.parent_id': parentId, 'metadata.name': name }), ...nameViolations('metadata.name', name)];
    if (parentId !== '' && !this.kind.parentIdPattern.test(parentId)) {
      violations.push({ field: 'metadata.parent_id', message: `must be a ${this.kind.parentLabel} id (${this.kind.parentLabel}-…)` });
    }
    violations.push(...(this.kind.specViolations?.(input.spec) ?? []));
    if (violations.length > 0) throw invalid(violations);
    authorize(principal, 'mutate', parentId);
    return this.knex.transaction(async (trx) => {
      if (!(await this.kind.parentExists(parentId, trx)))
        throw new AppError('not_found', `${this.kind.parentLabel} ${parentId} not found`, { resourceId: parentId });
      if (this.kind.quota) await this.repository.lockParent(parentId, trx);
      const existing = await this.repository.findByName(parentId, name, trx);
      if (existing) throw this.nameTaken(name, parentId, existing.id);
      if (this.kind.quota) await this.checkQuota(parentId, this.kind.quota, trx);
      const id = `${this.kind.idPrefix}-${randomBytes(10).toString('hex')}`;
      const now = timestampFromDate(new Date());
      const init = {
        metadata: { id, parentId, name, labels: input.metadata?.labels ?? {}, resourceVersion: 1n, createdAt: now, updatedAt: now },
        spec: input.spec,
        status: this.kind.initialStatus(),
      } as MessageInitShape<GenMessage<T>>;
      const resource = create(this.kind.schema, init);
      await this.repository
        .insert(
          { id, parent_id: parentId, name, resource_version: 1, data: toBinary(this.kind.schema, resource), doc: resourceDocument(this.kind.schema, resource) },
          trx,
        )
        .catch(onUniqueViolation(() => this.nameTaken(name, parentId, '')));
      await this.kind.afterWrite?.(trx, resource, undefined);
      return beginOperation(this.operations, trx, this.kind.service, principal, { resourceId: id, parentId }, operation);
    });
  }

  /**
   * Replaces the resource under the reset mask (docs/cloud-api.md, "Update with a reset mask"); `transition` then sets what the
   * update starts (an instance goes UPDATING while its work runs).
   */
  update(
    principal: Principal,
    input: { metadata?: ResourceMetadata; spec?: T['spec'] },
    mask: ResetMask,
    operation: OperationInput,
    transition?: (next: T, stored: T) => void,
  ): Promise<OperationRow> {
    const id = input.metadata?.id ?? '';
    requireFields({ 'metadata.id': id });
    return this.mutate(principal, id, async (stored, row, trx) => {
      // An empty parent_id or name means "unchanged", also when the mask names it: both are required,
      // so empty is never a value to store, and SDKs that derive the mask from default fields (the
      // Python SDK's full-update mask) name them whenever the caller left them out (docs/cloud-api.md).
      const metadata = input.metadata && { ...input.metadata, parentId: input.metadata.parentId || row.parent_id, name: input.metadata.name || row.name };
      const incoming = { metadata, spec: input.spec } as MessageInitShape<GenMessage<T>> & { metadata?: ResourceMetadata };
      const next = replaceWithResetMask(this.kind.schema, stored as T & { metadata?: ResourceMetadata }, incoming, mask, this.kind.label);
      const name = next.metadata?.name ?? '';
      const violations = [
        ...requiredViolations({ 'metadata.name': name }),
        ...nameViolations('metadata.name', name),
        ...(this.kind.specViolations?.(next.spec) ?? []),
      ];
      if (violations.length > 0) throw invalid(violations);
      if (name !== row.name) {
        const existing = await this.repository.findByName(row.parent_id, name, trx);
        if (existing && existing.id !== id) throw this.nameTaken(name, row.parent_id, existing.id);
      }
      transition?.(next, stored);
      const printed = printResetMask(mask);
      return { next, operation: { ...operation, headers: printed === '' ? operation.headers : { ...operation.headers, 'x-resetmask': [printed] } } };
    });
  }

  /** Deletes the resource now (after `beforeDelete` agrees) and records its operation. */
  delete(principal: Principal, id: string, operation: OperationInput): Promise<OperationRow> {
    requireFields({ id });
    return this.mutate(principal, id, async (_stored, row, trx) => {
      await this.kind.beforeDelete?.(row, trx);
      return { next: 'deleted', operation };
    });
  }

  /**
   * The shared shape of every change to an existing resource: lock it, check access (and, for
   * kinds with background work, that no other operation runs on it), compute the change, save it
   * with `resource_version` bumped (or delete the row), start its operation.
   */
  mutate(principal: Principal, id: string, change: (stored: T, row: ResourceRow, trx: Knex) => Promise<Mutation<T>>): Promise<OperationRow> {
    return this.knex.transaction(async (trx) => {
      const row = await this.repository.lock(id, trx);
      if (!row) throw this.notFound(id);
      authorize(principal, 'mutate', this.scopeOf(row, 'mutate'));
      if (this.kind.oneOperationAtATime) {
        const running = await this.operations.runningFor(id, trx);
        if (running) {
          throw new AppError('aborted', `${this.kind.label} ${id} has a running operation ${running}; retry when it completes`, {
            resourceId: id,
            detail: { kind: 'operation_conflict', conflictingOperationId: running },
          });
        }
      }
      const stored = this.decode(row);
      const { next, operation } = await change(stored, row, trx);
      if (next === 'deleted') {
        await this.repository.delete(id, trx);
      } else {
        const name = next.metadata?.name ?? '';
        await this.save(trx, next).catch(onUniqueViolation(() => this.nameTaken(name, row.parent_id, '')));
      }
      await this.kind.afterWrite?.(trx, next === 'deleted' ? undefined : next, stored);
      const withPrevious = operation.work === undefined ? operation : { ...operation, previous: row.data };
      return beginOperation(this.operations, trx, this.kind.service, principal, { resourceId: id, parentId: row.parent_id }, withPrevious);
    });
  }

  /** Writes the resource with `resource_version` bumped and `updated_at` set. */
  async save(trx: Knex, resource: T): Promise<void> {
    const metadata = resource.metadata;
    if (!metadata) throw new Error(`a ${this.kind.label} without metadata`);
    bumpVersion(metadata);
    await this.repository.update(
      {
        id: metadata.id,
        name: metadata.name,
        resource_version: Number(metadata.resourceVersion),
        data: toBinary(this.kind.schema, resource),
        doc: resourceDocument(this.kind.schema, resource),
      },
      trx,
    );
  }

  notFound(id: string): AppError {
    return new AppError('not_found', `${this.kind.label} ${id} not found`, { resourceId: id });
  }

  private async checkQuota(parentId: string, quota: NonNullable<NamedResourceKind<T>['quota']>, trx: Knex): Promise<void> {
    // Counts no further than the quota: O(quota), not O(the parent's resources), under the parent's lock.
    const count = await this.repository.countByParent(parentId, trx, quota.limit);
    if (count >= quota.limit) {
      throw new AppError('resource_exhausted', `${this.kind.parentLabel} ${parentId} already has ${count} ${quota.plural} (quota ${quota.limit})`, {
        resourceId: parentId,
        detail: { kind: 'quota_failure', quota: quota.name, limit: quota.limit, requested: count + 1 },
      });
    }
  }

  private nameTaken(name: string, parentId: string, existingId: string): AppError {
    const article = /^[aeiou]/i.test(this.kind.label) ? 'an' : 'a';
    return new AppError('already_exists', `${article} ${this.kind.label} named "${name}" already exists in ${parentId}`, { resourceId: existingId });
  }
}

/** Every change of a stored resource bumps `resource_version` and sets `updated_at`, so version checks see it. */
export function bumpVersion(metadata: ResourceMetadata): void {
  metadata.resourceVersion += 1n;
  metadata.updatedAt = timestampFromDate(new Date());
}

/**
 * Starts the operation of a mutation inside its transaction (so the change and its operation
 * commit together): with background work it runs until the work completes, without it is
 * recorded already complete.
 */
export function beginOperation(
  operations: Operations,
  trx: Knex,
  service: string,
  principal: Principal,
  target: { resourceId: string; parentId: string },
  operation: OperationInput,
): Promise<OperationRow> {
  return operations.begin(trx, {
    service,
    description: operation.description,
    createdBy: principal.id,
    resourceId: target.resourceId,
    parentId: target.parentId,
    request: operation.request,
    requestHeaders: operation.headers,
    ...(operation.idempotency ? { idempotency: operation.idempotency } : {}),
    ...(operation.work === undefined
      ? { status: okStatus() }
      : { work: { kind: operation.work, payload: operation.previous ? { previous: Buffer.from(operation.previous).toString('base64') } : {} } }),
  });
}

export function requiredViolations(fields: Record<string, string>): Violation[] {
  return Object.entries(fields).flatMap(([field, value]) => (value === '' ? [{ field, message: 'is required' }] : []));
}

export function nameViolations(field: string, name: string): Violation[] {
  if (name.length > NAME_MAX) return [{ field, message: `must be at most ${NAME_MAX} characters` }];
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
  if (/[\u0000-\u001f]/.test(name)) return [{ field, message: 'must not contain control characters' }];
  return [];
}

/** INVALID_ARGUMENT naming each empty field. */
export function requireFields(fields: Record<string, string>): void {
  const violations = requiredViolations(fields);
  if (violations.length > 0) throw invalid(violations);
}

export function invalid(violations: Violation[], message?: string): AppError {
  return new AppError('invalid_argument', message ?? violations.map((v) => `${v.field} ${v.message}`).join('; '), { violations });
}
