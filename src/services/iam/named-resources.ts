import { randomBytes } from 'node:crypto';
import { clone, create, fromBinary, toBinary, type Message, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { GenMessage } from '@bufbuild/protobuf/codegenv2';
import type { Knex } from 'knex';
import type { Page } from '../cloud/paging.js';
import type { RecordedHeaders } from '../../engines/operations/index.js';
import type { ResourceMetadata } from '../../../generated/proto/cloud/common/v1/metadata_pb.js';
import { AppError, type Violation } from '../../errors.js';
import { authorize, type Principal } from '../../auth/principal.js';
import { okStatus, type Operations } from '../../engines/operations/index.js';
import { printResetMask, type ResetMask } from '../../engines/reset-mask/index.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import type { ResourceRepository, ResourceRow } from '../../store/repositories/resource-repository.js';
import { decodePageToken, encodePageToken, pageSize } from '../cloud/paging.js';
import { replaceWithResetMask } from '../cloud/resource-update.js';

/** The api_service_name of the IAM resource services: their operations are served on this endpoint. */
export const IAM_SERVICE = 'cpl.iam';

/** A resource with the cloud API's `{metadata, spec, status}` shape. */
export type NamedResource = Message & { metadata?: ResourceMetadata; spec?: Message; status?: Message };


/** What differs between projects and service accounts; everything else is shared. */
export interface NamedResourceKind<T extends NamedResource> {
  schema: GenMessage<T>;
  /** The id prefix: ids are `<idPrefix>-<20 hex>`. */
  idPrefix: string;
  /** The resource in messages ("project", "service account"). */
  label: string;
  /** The parent in messages ("tenant", "project"). */
  parentLabel: string;
  parentIdPattern: RegExp;
  repository: ResourceRepository;
  /** The status of a new resource. */
  initialStatus(): MessageInitShape<GenMessage<T>>['status'];
  parentExists(parentId: string, trx: Knex): Promise<boolean>;
  /**
   * Whose project decides a read: the resource itself (a project: a service account may read its
   * own project) or its parent (a service account: readable inside its project).
   */
  readScope: 'self' | 'parent';
  /** Refuses a delete that would orphan something (a project with accounts or instances). */
  beforeDelete?(row: ResourceRow, trx: Knex): Promise<void>;
}


const NAME_MAX = 128;

/**
 * The rules every named IAM resource shares (SPEC §5 request shapes): ids `<kind>-<opaque>`, names
 * unique per parent (ALREADY_EXISTS), keyset paging, `resource_version` checks, Update as full
 * replace under the reset mask, and synchronous mutations whose Operation is already complete.
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
   * One page of a parent's resources. When resources are their own read scope (projects), a
   * service account's list holds only what it may read (its own project) instead of failing.
   */
  async list(principal: Principal, request: { parentId: string; pageSize: bigint; pageToken: string; filter: string }): Promise<Page<T>> {
    requireFields({ parent_id: request.parentId });
    if (request.filter.trim() !== '') {
      throw new AppError('invalid_argument', 'filter is not supported yet; leave it empty', { violations: [{ field: 'filter', message: 'is not supported' }] });
    }
    const size = pageSize(request.pageSize);
    const scope = `${this.kind.idPrefix}:${request.parentId}`;
    const after = decodePageToken(scope, request.pageToken);
    let only: string[] | undefined;
    if (this.kind.readScope === 'parent') authorize(principal, 'read', request.parentId);
    else if (principal.kind === 'service-account') only = [principal.projectId];
    const rows = await this.repository.list(request.parentId, after, size + 1, this.knex, only);
    const page = rows.slice(0, size);
    const last = page[page.length - 1];
    return { items: page.map((row) => this.decode(row)), nextPageToken: rows.length > size && last ? encodePageToken(scope, last.seq) : '' };
  }

  /** Creates the resource and records its (already complete) operation in one transaction. */
  async create(
    principal: Principal,
    input: { metadata?: ResourceMetadata; spec?: Message },
    operation: { description: string; request: Uint8Array; headers: RecordedHeaders },
  ): Promise<OperationRow> {
    const parentId = input.metadata?.parentId ?? '';
    const name = input.metadata?.name ?? '';
    const violations = [...requiredViolations({ 'metadata.parent_id': parentId, 'metadata.name': name }), ...nameViolations('metadata.name', name)];
    if (parentId !== '' && !this.kind.parentIdPattern.test(parentId)) violations.push({ field: 'metadata.parent_id', message: `must be a ${this.kind.parentLabel} id` });
    if (violations.length > 0) throw invalid(violations);
    authorize(principal, 'mutate', parentId);
    return this.knex.transaction(async (trx) => {
      if (!(await this.kind.parentExists(parentId, trx))) throw new AppError('not_found', `${this.kind.parentLabel} ${parentId} not found`, { resourceId: parentId });
      const existing = await this.repository.findByName(parentId, name, trx);
      if (existing) throw this.nameTaken(name, parentId, existing.id);
      const id = `${this.kind.idPrefix}-${randomBytes(10).toString('hex')}`;
      const now = timestampFromDate(new Date());
      const init = {
        metadata: { id, parentId, name, labels: input.metadata?.labels ?? {}, resourceVersion: 1n, createdAt: now, updatedAt: now },
        spec: input.spec,
        status: this.kind.initialStatus(),
      } as MessageInitShape<GenMessage<T>>;
      const resource = create(this.kind.schema, init);
      await this.repository
        .insert({ id, parent_id: parentId, name, resource_version: 1, data: toBinary(this.kind.schema, resource) }, trx)
        .catch(this.uniqueName(name, parentId));
      return this.finished(trx, principal, id, parentId, operation);
    });
  }

  /** Replaces the resource under the reset mask (SPEC §5 Update). */
  async update(
    principal: Principal,
    input: { metadata?: ResourceMetadata; spec?: Message },
    mask: ResetMask,
    operation: { description: string; request: Uint8Array; headers: RecordedHeaders },
  ): Promise<OperationRow> {
    const id = input.metadata?.id ?? '';
    requireFields({ 'metadata.id': id });
    return this.knex.transaction(async (trx) => {
      const row = await this.repository.lock(id, trx);
      if (!row) throw this.notFound(id);
      authorize(principal, 'mutate', this.scopeOf(row, 'mutate'));
      const stored = this.decode(row) as T & { metadata?: ResourceMetadata };
      const next = replaceWithResetMask(this.kind.schema, stored, { metadata: input.metadata, spec: input.spec } as MessageInitShape<GenMessage<T>> & { metadata?: ResourceMetadata }, mask, this.kind.label);
      const name = next.metadata?.name ?? '';
      const violations = [...requiredViolations({ 'metadata.name': name }), ...nameViolations('metadata.name', name)];
      if (violations.length > 0) throw invalid(violations);
      if (name !== row.name) {
        const existing = await this.repository.findByName(row.parent_id, name, trx);
        if (existing && existing.id !== id) throw this.nameTaken(name, row.parent_id, existing.id);
      }
      await this.save(trx, next).catch(this.uniqueName(name, row.parent_id));
      const printed = printResetMask(mask);
      return this.finished(trx, principal, id, row.parent_id, {
        ...operation,
        headers: printed === '' ? operation.headers : { ...operation.headers, 'x-resetmask': [printed] },
      });
    });
  }

  async delete(principal: Principal, id: string, operation: { description: string; request: Uint8Array; headers: RecordedHeaders }): Promise<OperationRow> {
    requireFields({ id });
    return this.knex.transaction(async (trx) => {
      const row = await this.repository.lock(id, trx);
      if (!row) throw this.notFound(id);
      authorize(principal, 'mutate', this.scopeOf(row, 'mutate'));
      await this.kind.beforeDelete?.(row, trx);
      await this.repository.delete(id, trx);
      return this.finished(trx, principal, id, row.parent_id, operation);
    });
  }

  /** Writes the resource with `resource_version` bumped and `updated_at` set. */
  async save(trx: Knex, resource: T): Promise<void> {
    const metadata = resource.metadata;
    if (!metadata) throw new Error(`a ${this.kind.label} without metadata`);
    metadata.resourceVersion += 1n;
    metadata.updatedAt = timestampFromDate(new Date());
    await this.repository.update({ id: metadata.id, name: metadata.name, resource_version: Number(metadata.resourceVersion), data: toBinary(this.kind.schema, resource) }, trx);
  }

  /** A copy of a stored resource (for callers that change it and `save` it). */
  copy(resource: T): T {
    return clone(this.kind.schema, resource);
  }

  notFound(id: string): AppError {
    return new AppError('not_found', `${this.kind.label} ${id} not found`, { resourceId: id });
  }

  private finished(
    trx: Knex,
    principal: Principal,
    resourceId: string,
    parentId: string,
    operation: { description: string; request: Uint8Array; headers: RecordedHeaders },
  ): Promise<OperationRow> {
    return this.operations.begin(trx, {
      service: IAM_SERVICE,
      description: operation.description,
      createdBy: principal.id,
      resourceId,
      parentId,
      request: operation.request,
      requestHeaders: operation.headers,
      status: okStatus(),
    });
  }

  private nameTaken(name: string, parentId: string, existingId: string): AppError {
    return new AppError('already_exists', `a ${this.kind.label} named "${name}" already exists in ${parentId}`, { resourceId: existingId });
  }

  /** A concurrent create or rename of the same name loses on the unique index: ALREADY_EXISTS, not INTERNAL. */
  private uniqueName(name: string, parentId: string): (error: unknown) => never {
    return (error) => {
      if (typeof error === 'object' && error !== null && (error as { code?: string }).code === '23505') throw this.nameTaken(name, parentId, '');
      throw error;
    };
  }
}

export function requiredViolations(fields: Record<string, string>): Violation[] {
  return Object.entries(fields).flatMap(([field, value]) => (value === '' ? [{ field, message: 'is required' }] : []));
}

export function nameViolations(field: string, name: string): Violation[] {
  if (name.length > NAME_MAX) return [{ field, message: `must be at most ${NAME_MAX} characters` }];
  if (/[\u0000-\u001f]/.test(name)) return [{ field, message: 'must not contain control characters' }];
  return [];
}

export function requireFields(fields: Record<string, string>): void {
  const violations = requiredViolations(fields);
  if (violations.length > 0) throw invalid(violations);
}

export function invalid(violations: Violation[], message?: string): AppError {
  return new AppError('invalid_argument', message ?? violations.map((v) => `${v.field} ${v.message}`).join('; '), { violations });
}
