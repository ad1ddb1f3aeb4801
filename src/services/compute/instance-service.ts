import { createHash, randomBytes } from 'node:crypto';
import { clone, create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Knex } from 'knex';
import type { Page } from '../cloud/paging.js';
import type { RecordedHeaders } from '../../engines/operations/index.js';
import {
  InstanceSchema,
  InstanceStatus_State as State,
  InstanceSpecSchema,
  InstanceStatusSchema,
  NetworkInterfaceStatusSchema,
  type Instance,
  type InstanceSpec,
} from '../../../generated/proto/cloud/compute/v1/instance_pb.js';
import {
  CreateInstanceRequestSchema,
  DeleteInstanceRequestSchema,
  StartInstanceRequestSchema,
  StopInstanceRequestSchema,
  UpdateInstanceRequestSchema,
  type CreateInstanceRequest,
  type UpdateInstanceRequest,
} from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { AppError, type Violation } from '../../errors.js';
import { authorize, type Principal } from '../../auth/principal.js';
import { applyResetMask, ImmutableFieldError, printResetMask, type ResetMask } from '../../engines/reset-mask/index.js';
import { packOperationRequest, type Operations, type WorkHandler } from '../../engines/operations/index.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import { ResourceRepository, type ResourceRow } from '../../store/repositories/resource-repository.js';
import { decodePageToken, encodePageToken, pageSize } from '../cloud/paging.js';

/** The api_service_name of InstanceService: operations it starts are served on this endpoint. */
export const COMPUTE_SERVICE = 'compute';

/** Decides whether a parent id names an existing project; the IAM area plugs in its project table. */
export type ParentCheck = (parentId: string, trx: Knex) => Promise<boolean>;

/** Until projects exist as resources, any well-formed `project-<opaque>` id is accepted as a parent. */
export const PROJECT_ID_PATTERN = /^project-[A-Za-z0-9]{1,64}$/;
export const wellFormedProjectId: ParentCheck = async (parentId) => PROJECT_ID_PATTERN.test(parentId);

export interface InstanceServiceOptions {
  quotaPerProject: number;
  parentExists?: ParentCheck;
}



const WORK = {
  create: 'compute.instance.create',
  update: 'compute.instance.update',
  start: 'compute.instance.start',
  stop: 'compute.instance.stop',
  delete: 'compute.instance.delete',
} as const;

const NAME_MAX = 128;

/**
 * Every rule of compute instances (SPEC §5): validation, uniqueness, quota, one operation at a
 * time per instance, `resource_version` checks, Update as full replace under the reset mask, and
 * the state transitions their background work completes.
 */
export class InstanceService {
  private readonly instances: ResourceRepository;
  private readonly parentExists: ParentCheck;

  constructor(
    private readonly knex: Knex,
    private readonly operations: Operations,
    private readonly options: InstanceServiceOptions,
  ) {
    this.instances = new ResourceRepository(knex, 'compute_instances');
    this.parentExists = options.parentExists ?? wellFormedProjectId;
  }

  async get(principal: Principal, id: string): Promise<Instance> {
    requireField('id', id);
    const row = await this.instances.findById(id);
    if (!row) throw instanceNotFound(id);
    authorize(principal, 'read', row.parent_id);
    return decode(row);
  }

  async getByName(principal: Principal, parentId: string, name: string): Promise<Instance> {
    requireFields({ parent_id: parentId, name });
    authorize(principal, 'read', parentId);
    const row = await this.instances.findByName(parentId, name);
    if (!row) throw new AppError('not_found', `no instance named "${name}" in ${parentId}`, { resourceId: name });
    return decode(row);
  }

  async list(principal: Principal, request: { parentId: string; pageSize: bigint; pageToken: string; filter: string }): Promise<Page<Instance>> {
    requireField('parent_id', request.parentId);
    if (request.filter.trim() !== '') {
      throw new AppError('invalid_argument', 'filter is not supported yet; leave it empty', { violations: [{ field: 'filter', message: 'is not supported' }] });
    }
    const size = pageSize(request.pageSize);
    const scope = `instances:${request.parentId}`;
    const after = decodePageToken(scope, request.pageToken);
    authorize(principal, 'read', request.parentId);
    const rows = await this.instances.list(request.parentId, after, size + 1);
    const page = rows.slice(0, size);
    const last = page[page.length - 1];
    return { items: page.map(decode), nextPageToken: rows.length > size && last ? encodePageToken(scope, last.seq) : '' };
  }

  async listOperationsByParent(principal: Principal, request: { parentId: string; pageSize: bigint; pageToken: string }): Promise<Page<OperationRow>> {
    requireField('parent_id', request.parentId);
    const size = pageSize(request.pageSize);
    const scope = `operations-by-parent:${request.parentId}`;
    const before = decodePageToken(scope, request.pageToken);
    authorize(principal, 'read', request.parentId);
    const rows = await this.operations.list({ parentId: request.parentId, services: [COMPUTE_SERVICE], beforeSeq: before, limit: size + 1 });
    const page = rows.slice(0, size);
    const last = page[page.length - 1];
    return { items: page, nextPageToken: rows.length > size && last ? encodePageToken(scope, last.seq) : '' };
  }

  /** Creates the instance in state CREATING; its operation's work brings it to RUNNING (or STOPPED). */
  async create(principal: Principal, request: CreateInstanceRequest, headers: RecordedHeaders = {}): Promise<OperationRow> {
    const parentId = request.metadata?.parentId ?? '';
    const name = request.metadata?.name ?? '';
    const violations = [...requiredViolations({ 'metadata.parent_id': parentId, 'metadata.name': name }), ...nameViolations('metadata.name', name)];
    if (parentId !== '' && !PROJECT_ID_PATTERN.test(parentId)) violations.push({ field: 'metadata.parent_id', message: 'must be a project id (project-…)' });
    violations.push(...specViolations(request.spec));
    if (violations.length > 0) throw invalid(violations);
    authorize(principal, 'mutate', parentId);
    return this.knex.transaction(async (trx) => {
      if (!(await this.parentExists(parentId, trx))) throw new AppError('not_found', `project ${parentId} not found`, { resourceId: parentId });
      await this.instances.lockParent(parentId, trx);
      const existing = await this.instances.findByName(parentId, name, trx);
      if (existing) throw nameTaken(name, parentId, existing.id);
      const count = await this.instances.countByParent(parentId, trx);
      if (count >= this.options.quotaPerProject) {
        throw new AppError('resource_exhausted', `project ${parentId} already has ${count} instances (quota ${this.options.quotaPerProject})`, {
          resourceId: parentId,
          detail: { kind: 'quota_failure', quota: 'compute.instances.count', limit: this.options.quotaPerProject, requested: count + 1 },
        });
      }
      const now = timestampFromDate(new Date());
      const id = `instance-${randomBytes(10).toString('hex')}`;
      const instance = create(InstanceSchema, {
        metadata: { id, parentId, name, labels: request.metadata?.labels ?? {}, resourceVersion: 1n, createdAt: now, updatedAt: now },
        spec: request.spec ? clone(InstanceSpecSchema, request.spec) : {},
        status: { state: State.CREATING, reconciling: true },
      });
      await this.instances.insert({ id, parent_id: parentId, name, resource_version: 1, data: toBinary(InstanceSchema, instance) }, trx).catch(uniqueName(name, parentId));
      return this.operations.begin(trx, {
        service: COMPUTE_SERVICE,
        description: 'Create instance',
        createdBy: principal.id,
        resourceId: id,
        parentId,
        request: packOperationRequest(CreateInstanceRequestSchema, request),
        requestHeaders: headers,
        work: { kind: WORK.create },
      });
    });
  }

  /**
   * Replaces the instance with the request under the reset mask (SPEC §5): `resource_version` 0
   * skips the version check, another stale value → ABORTED; an IMMUTABLE change → INVALID_ARGUMENT.
   */
  async update(principal: Principal, request: UpdateInstanceRequest, mask: ResetMask, headers: RecordedHeaders = {}): Promise<OperationRow> {
    const id = request.metadata?.id ?? '';
    requireField('metadata.id', id);
    return this.mutate(principal, id, async (trx, stored) => {
      const expected = request.metadata?.resourceVersion ?? 0n;
      const storedVersion = stored.metadata?.resourceVersion ?? 0n;
      if (expected !== 0n && expected !== storedVersion) {
        throw new AppError('aborted', `metadata.resource_version ${expected} does not match the stored ${storedVersion}; read the instance again`, {
          resourceId: id,
          detail: { kind: 'resource_conflict' },
        });
      }
      let next: Instance;
      try {
        next = applyResetMask(InstanceSchema, stored, create(InstanceSchema, { metadata: request.metadata, spec: request.spec }), mask);
      } catch (error) {
        if (error instanceof ImmutableFieldError) throw invalid([{ field: error.fieldPath, message: 'is immutable and cannot be changed' }], error.message);
        throw error;
      }
      const name = next.metadata?.name ?? '';
      const violations = [...requiredViolations({ 'metadata.name': name }), ...nameViolations('metadata.name', name), ...specViolations(next.spec)];
      if (violations.length > 0) throw invalid(violations);
      const parentId = stored.metadata?.parentId ?? '';
      if (name !== stored.metadata?.name) {
        const existing = await this.instances.findByName(parentId, name, trx);
        if (existing && existing.id !== id) throw nameTaken(name, parentId, existing.id);
      }
      next.status = withState(stored, State.UPDATING).status;
      const printed = printResetMask(mask);
      return {
        instance: next,
        description: 'Update instance',
        request: packOperationRequest(UpdateInstanceRequestSchema, request),
        headers: printed === '' ? headers : { ...headers, 'x-resetmask': [printed] },
        kind: WORK.update,
      };
    });
  }

  async start(principal: Principal, id: string, headers: RecordedHeaders = {}): Promise<OperationRow> {
    requireField('id', id);
    return this.mutate(principal, id, async (_trx, stored) => {
      requireState(stored, [State.STOPPED], 'Start');
      const next = withState(stored, State.STARTING);
      next.spec = create(InstanceSpecSchema, next.spec);
      next.spec.stopped = false;
      return { instance: next, description: 'Start instance', request: packOperationRequest(StartInstanceRequestSchema, create(StartInstanceRequestSchema, { id })), headers, kind: WORK.start };
    });
  }

  async stop(principal: Principal, id: string, headers: RecordedHeaders = {}): Promise<OperationRow> {
    requireField('id', id);
    return this.mutate(principal, id, async (_trx, stored) => {
      requireState(stored, [State.RUNNING, State.ERROR], 'Stop');
      const next = withState(stored, State.STOPPING);
      next.spec = create(InstanceSpecSchema, next.spec);
      next.spec.stopped = true;
      return { instance: next, description: 'Stop instance', request: packOperationRequest(StopInstanceRequestSchema, create(StopInstanceRequestSchema, { id })), headers, kind: WORK.stop };
    });
  }

  async delete(principal: Principal, id: string, headers: RecordedHeaders = {}): Promise<OperationRow> {
    requireField('id', id);
    return this.mutate(principal, id, async (_trx, stored) => {
      const next = withState(stored, State.DELETING);
      return { instance: next, description: 'Delete instance', request: packOperationRequest(DeleteInstanceRequestSchema, create(DeleteInstanceRequestSchema, { id })), headers, kind: WORK.delete };
    });
  }

  /** The background work of every instance operation, by kind. */
  workHandlers(): Record<string, WorkHandler> {
    const settle = (finish: (instance: Instance) => void): WorkHandler => ({
      complete: async (trx, work) => {
        const row = await this.instances.lock(work.resourceId, trx);
        if (!row) return;
        const instance = decode(row);
        finish(instance);
        await this.save(trx, instance);
      },
      fail: async (trx, work) => {
        const row = await this.instances.lock(work.resourceId, trx);
        if (!row) return;
        const instance = decode(row);
        const failed = withState(instance, State.ERROR);
        if (failed.status) failed.status.reconciling = false;
        await this.save(trx, failed);
      },
    });
    const steady = (instance: Instance) => {
      instance.status = create(InstanceStatusSchema, {
        state: instance.spec?.stopped ? State.STOPPED : State.RUNNING,
        reconciling: false,
        networkInterfaces: allocateAddresses(instance),
      });
    };
    return {
      [WORK.create]: settle(steady),
      [WORK.update]: settle(steady),
      [WORK.start]: settle(steady),
      [WORK.stop]: settle(steady),
      [WORK.delete]: {
        complete: async (trx, work) => {
          await this.instances.delete(work.resourceId, trx);
        },
      },
    };
  }

  /**
   * The shared shape of every mutation of an existing instance: lock it, check access and that no
   * other operation runs on it, compute the new state, bump `resource_version`, start the operation.
   */
  private async mutate(
    principal: Principal,
    id: string,
    change: (trx: Knex, stored: Instance) => Promise<{ instance: Instance; description: string; request: Uint8Array; headers: RecordedHeaders; kind: string }>,
  ): Promise<OperationRow> {
    return this.knex.transaction(async (trx) => {
      const row = await this.instances.lock(id, trx);
      if (!row) throw instanceNotFound(id);
      authorize(principal, 'mutate', row.parent_id);
      const running = await this.operations.runningFor(id, trx);
      if (running) {
        throw new AppError('aborted', `instance ${id} has a running operation ${running}; retry when it completes`, {
          resourceId: id,
          detail: { kind: 'operation_conflict', conflictingOperationId: running },
        });
      }
      const result = await change(trx, decode(row));
      await this.save(trx, result.instance).catch(uniqueName(result.instance.metadata?.name ?? '', row.parent_id));
      return this.operations.begin(trx, {
        service: COMPUTE_SERVICE,
        description: result.description,
        createdBy: principal.id,
        resourceId: id,
        parentId: row.parent_id,
        request: result.request,
        requestHeaders: result.headers,
        work: { kind: result.kind },
      });
    });
  }

  /** Writes the instance with its `resource_version` bumped and `updated_at` set: every change is visible to version checks. */
  private async save(trx: Knex, instance: Instance): Promise<void> {
    const metadata = instance.metadata;
    if (!metadata) throw new Error('an instance without metadata');
    metadata.resourceVersion += 1n;
    metadata.updatedAt = timestampFromDate(new Date());
    await this.instances.update(
      { id: metadata.id, name: metadata.name, resource_version: Number(metadata.resourceVersion), data: toBinary(InstanceSchema, instance) },
      trx,
    );
  }
}

/** A copy of the instance in a transitional (or ERROR) state. */
function withState(instance: Instance, state: State): Instance {
  const next = clone(InstanceSchema, instance);
  next.status = create(InstanceStatusSchema, next.status);
  next.status.state = state;
  next.status.reconciling = true;
  return next;
}

function decode(row: ResourceRow): Instance {
  return fromBinary(InstanceSchema, row.data);
}

/** Deterministic fake addresses per interface, like a cloud's allocator would answer. */
function allocateAddresses(instance: Instance) {
  const seed = createHash('sha256').update(instance.metadata?.id ?? '').digest();
  return (instance.spec?.networkInterfaces ?? []).map((nic, index) =>
    create(NetworkInterfaceStatusSchema, {
      name: nic.name,
      ipAddress: nic.ipAddress !== '' ? nic.ipAddress : `10.${seed[0] ?? 0}.${seed[1] ?? 0}.${(index + 2) % 255}`,
      publicIpAddress: nic.publicIp ? `203.0.113.${((seed[2] ?? 0) + index) % 254 + 1}` : '',
    }),
  );
}

function requireState(instance: Instance, allowed: State[], action: string): void {
  const state = instance.status?.state ?? State.UNSPECIFIED;
  if (!allowed.includes(state)) {
    throw new AppError('failed_precondition', `${action} needs the instance to be ${allowed.map((s) => State[s]).join(' or ')}; it is ${State[state]}`, {
      resourceId: instance.metadata?.id ?? '',
      detail: { kind: 'bad_resource_state' },
    });
  }
}

function requiredViolations(fields: Record<string, string>): Violation[] {
  return Object.entries(fields).flatMap(([field, value]) => (value === '' ? [{ field, message: 'is required' }] : []));
}

function nameViolations(field: string, name: string): Violation[] {
  if (name.length > NAME_MAX) return [{ field, message: `must be at most ${NAME_MAX} characters` }];
  if (/[\u0000-\u001f]/.test(name)) return [{ field, message: 'must not contain control characters' }];
  return [];
}

function specViolations(spec: InstanceSpec | undefined): Violation[] {
  const violations: Violation[] = [];
  for (const [key, forward] of Object.entries(spec?.ports ?? {})) {
    if (forward.port < 1 || forward.port > 65535) violations.push({ field: `spec.ports.${key}.port`, message: 'must be between 1 and 65535' });
  }
  (spec?.networkInterfaces ?? []).forEach((nic, index) => {
    if (nic.ipAddress !== '' && !/^(\d{1,3})(\.\d{1,3}){3}$/.test(nic.ipAddress)) {
      violations.push({ field: `spec.network_interfaces.${index}.ip_address`, message: 'must be an IPv4 address' });
    }
  });
  return violations;
}

function requireField(field: string, value: string): void {
  requireFields({ [field]: value });
}

function requireFields(fields: Record<string, string>): void {
  const violations = requiredViolations(fields);
  if (violations.length > 0) throw invalid(violations);
}

function invalid(violations: Violation[], message?: string): AppError {
  return new AppError('invalid_argument', message ?? violations.map((v) => `${v.field} ${v.message}`).join('; '), { violations });
}

function instanceNotFound(id: string): AppError {
  return new AppError('not_found', `instance ${id} not found`, { resourceId: id });
}

function nameTaken(name: string, parentId: string, existingId: string): AppError {
  return new AppError('already_exists', `an instance named "${name}" already exists in ${parentId}`, { resourceId: existingId });
}

/** A concurrent create or rename of the same name loses on the unique index: ALREADY_EXISTS, not INTERNAL. */
function uniqueName(name: string, parentId: string): (error: unknown) => never {
  return (error) => {
    if (typeof error === 'object' && error !== null && (error as { code?: string }).code === '23505') throw nameTaken(name, parentId, '');
    throw error;
  };
}
