import { createHash } from 'node:crypto';
import { clone, create, fromBinary } from '@bufbuild/protobuf';
import { ResourceMetadataSchema } from '../../../generated/proto/cloud/common/v1/metadata_pb.js';
import type { Knex } from 'knex';
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
  InstanceService as InstanceServiceDesc,
  StartInstanceRequestSchema,
  StopInstanceRequestSchema,
  UpdateInstanceRequestSchema,
  type CreateInstanceRequest,
  type UpdateInstanceRequest,
} from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { AppError, type Violation } from '../../errors.js';
import type { Principal } from '../../auth/principal.js';
import type { ResetMask } from '../../engines/reset-mask/index.js';
import { packOperationRequest, type Operations, type OperationCall, type Work, type WorkHandler } from '../../engines/operations/index.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import { DEFAULT_LIST_SCAN_ROWS } from '../../store/filtered-list.js';
import { ResourceRepository } from '../../store/repositories/resource-repository.js';
import { NamedResources, PROJECT_ID_PATTERN, previousOf, requireFields, type ParentCheck, type ParentListRequest } from '../cloud/named-resources.js';
import type { Page } from '../cloud/paging.js';
import type { ResourceKind } from '../cloud/resource-kind.js';
import { DiskAttachments } from './disk-service.js';

/** The api_service_name of InstanceService: operations it starts are served on this endpoint. */
const COMPUTE_SERVICE = 'compute';

/** Until projects exist as resources, any well-formed `project-<opaque>` id is accepted as a parent. */
const wellFormedProjectId: ParentCheck = async (parentId) => PROJECT_ID_PATTERN.test(parentId);

export interface InstanceServiceOptions {
  quotaPerProject: number;
  parentExists?: ParentCheck;
  /** At most this many rows examined per filtered List page (default DEFAULT_LIST_SCAN_ROWS). */
  listScanRows?: number;
}

const WORK = {
  create: 'compute.instance.create',
  update: 'compute.instance.update',
  start: 'compute.instance.start',
  stop: 'compute.instance.stop',
  delete: 'compute.instance.delete',
} as const;

/**
 * Every rule of compute instances (docs/cloud-api.md): validation, uniqueness, quota, one operation at a
 * time per instance, `resource_version` checks, Update as full replace under the reset mask (the
 * rules all named resources share, in NamedResources), and the state transitions their
 * background work completes.
 */
class InstanceService {
  readonly resources: NamedResources<Instance>;
  private readonly disks: DiskAttachments;

  constructor(knex: Knex, operations: Operations, options: InstanceServiceOptions) {
    this.disks = new DiskAttachments(knex, operations);
    this.resources = new NamedResources(knex, operations, {
      schema: InstanceSchema,
      service: COMPUTE_SERVICE,
      idPrefix: 'instance',
      listScanRows: options.listScanRows ?? DEFAULT_LIST_SCAN_ROWS,
      label: 'instance',
      parentLabel: 'project',
      parentIdPattern: PROJECT_ID_PATTERN,
      repository: new ResourceRepository(knex, 'compute_instances'),
      initialStatus: () => ({ state: State.CREATING, reconciling: true }),
      parentExists: options.parentExists ?? wellFormedProjectId,
      readScope: 'parent',
      pageScope: (parentId) => `instances:${parentId}`,
      specViolations,
      quota: { limit: options.quotaPerProject, name: 'compute.instances.count', plural: 'instances' },
      oneOperationAtATime: true,
      afterWrite: (trx, next, previous) => this.syncDisks(trx, next ?? previous, next?.spec, previous?.spec),
    });
  }

  /** The disks of this server the instance names record it (DiskAttachments); those it no longer names are freed. */
  private syncDisks(
    trx: Knex,
    instance: Instance | undefined,
    next: InstanceSpec | undefined,
    previous: InstanceSpec | undefined,
    strict = true,
  ): Promise<void> {
    const target = { id: instance?.metadata?.id ?? '', projectId: instance?.metadata?.parentId ?? '' };
    return this.disks.sync(trx, target, next, previous, strict);
  }

  get(principal: Principal, id: string): Promise<Instance> {
    return this.resources.get(principal, id);
  }

  getByName(principal: Principal, parentId: string, name: string): Promise<Instance> {
    return this.resources.getByName(principal, parentId, name);
  }

  list(principal: Principal, request: ParentListRequest): Promise<Page<Instance>> {
    return this.resources.list(principal, request);
  }

  listOperationsByParent(principal: Principal, request: ParentListRequest): Promise<Page<OperationRow>> {
    return this.resources.listOperationsByParent(principal, request);
  }

  /** Creates the instance in state CREATING; its operation's work brings it to RUNNING (or STOPPED). */
  create(principal: Principal, request: CreateInstanceRequest, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    const spec = request.spec ? clone(InstanceSpecSchema, request.spec) : create(InstanceSpecSchema);
    return this.resources.create(
      principal,
      { metadata: request.metadata, spec },
      {
        description: 'Create instance',
        request: packOperationRequest(CreateInstanceRequestSchema, request),
        ...call,
        work: WORK.create,
      },
    );
  }

  /**
   * Replaces the instance with the request under the reset mask (docs/cloud-api.md, "Update with a reset mask"): `resource_version` 0
   * skips the version check, another stale value → ABORTED; an IMMUTABLE change → INVALID_ARGUMENT.
   */
  update(principal: Principal, request: UpdateInstanceRequest, mask: ResetMask, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    const operation = { description: 'Update instance', request: packOperationRequest(UpdateInstanceRequestSchema, request), ...call, work: WORK.update };
    return this.resources.update(principal, request, mask, operation, (next, stored) => {
      next.status = withState(stored, State.UPDATING).status;
    });
  }

  start(principal: Principal, id: string, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    requireFields({ id });
    return this.resources.mutate(principal, id, async (stored) => {
      requireState(stored, [State.STOPPED], 'Start');
      const next = withState(stored, State.STARTING);
      next.spec = create(InstanceSpecSchema, next.spec);
      next.spec.stopped = false;
      const request = packOperationRequest(StartInstanceRequestSchema, create(StartInstanceRequestSchema, { id }));
      return { next, operation: { description: 'Start instance', request, ...call, work: WORK.start } };
    });
  }

  stop(principal: Principal, id: string, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    requireFields({ id });
    return this.resources.mutate(principal, id, async (stored) => {
      requireState(stored, [State.RUNNING, State.ERROR], 'Stop');
      const next = withState(stored, State.STOPPING);
      next.spec = create(InstanceSpecSchema, next.spec);
      next.spec.stopped = true;
      const request = packOperationRequest(StopInstanceRequestSchema, create(StopInstanceRequestSchema, { id }));
      return { next, operation: { description: 'Stop instance', request, ...call, work: WORK.stop } };
    });
  }

  /** Marks the instance DELETING; its operation's work removes the row. */
  delete(principal: Principal, id: string, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    requireFields({ id });
    return this.resources.mutate(principal, id, async (stored) => {
      const request = packOperationRequest(DeleteInstanceRequestSchema, create(DeleteInstanceRequestSchema, { id }));
      return { next: withState(stored, State.DELETING), operation: { description: 'Delete instance', request, ...call, work: WORK.delete } };
    });
  }

  /**
   * The background work of every instance operation, by kind, with what a cancel leaves
   * (docs/operations.md, "Cancel"): a cancelled Create removes the instance (nothing half-made
   * stays, its name and quota are free again); a cancelled Update, Start, Stop or Delete puts the
   * instance back as it was before the mutation (spec, name, labels and state), as a new
   * `resource_version`.
   */
  workHandlers(): Record<string, WorkHandler> {
    const instances = this.resources.repository;
    const restore = async (trx: Knex, work: Work) => {
      const row = await instances.lock(work.resourceId, trx);
      const previous = previousOf(work.payload);
      if (!row || !previous) return;
      const before = fromBinary(InstanceSchema, previous);
      const current = this.resources.decode(row);
      const restored = clone(InstanceSchema, before);
      restored.metadata = restored.metadata ?? create(ResourceMetadataSchema);
      restored.metadata.resourceVersion = current.metadata?.resourceVersion ?? 0n;
      // Renamed by the Update, and the old name taken since: the instance keeps its new name.
      const name = before.metadata?.name ?? '';
      const holder = name === row.name ? undefined : await instances.findByName(row.parent_id, name, trx);
      if (holder && holder.id !== row.id) restored.metadata.name = row.name;
      await this.resources.save(trx, restored);
      await this.syncDisks(trx, restored, restored.spec, current.spec, false);
    };
    // The instance is gone: the disks it named are free.
    const remove = async (trx: Knex, work: Work) => {
      const row = await instances.lock(work.resourceId, trx);
      if (!row) return;
      await instances.delete(work.resourceId, trx);
      const gone = this.resources.decode(row);
      await this.syncDisks(trx, gone, undefined, gone.spec);
    };
    const settle = (finish: (instance: Instance) => void, phases: readonly string[]): WorkHandler => ({
      phases,
      complete: async (trx, work) => {
        const row = await instances.lock(work.resourceId, trx);
        if (!row) return;
        const instance = this.resources.decode(row);
        finish(instance);
        await this.resources.save(trx, instance);
      },
      fail: async (trx, work) => {
        const row = await instances.lock(work.resourceId, trx);
        if (!row) return;
        const failed = withState(this.resources.decode(row), State.ERROR);
        if (failed.status) failed.status.reconciling = false;
        await this.resources.save(trx, failed);
      },
      cancel: restore,
    });
    const steady = (instance: Instance) => {
      instance.status = create(InstanceStatusSchema, {
        state: instance.spec?.stopped ? State.STOPPED : State.RUNNING,
        reconciling: false,
        networkInterfaces: allocateAddresses(instance),
      });
    };
    return {
      [WORK.create]: {
        ...settle(steady, ['allocating resources', 'attaching disks', 'booting']),
        cancel: remove,
      },
      [WORK.update]: settle(steady, ['applying the spec', 'reconciling']),
      [WORK.start]: settle(steady, ['powering on', 'booting']),
      [WORK.stop]: settle(steady, ['shutting down the guest', 'powering off']),
      [WORK.delete]: {
        phases: ['stopping', 'releasing resources'],
        complete: remove,
        cancel: restore,
      },
    };
  }
}

/** The declaration of instances (src/services/cloud/resource-kind.ts): served by the cloud module, counted by the project-delete guard. */
export const instanceKind: ResourceKind = {
  service: InstanceServiceDesc,
  table: 'compute_instances',
  parent: 'project',
  plural: 'instances',
  rules: (context) => {
    const instances = new InstanceService(context.knex, context.operations, {
      quotaPerProject: context.quotaPerProject.instance ?? Number.MAX_SAFE_INTEGER,
      parentExists: context.parentExists,
      listScanRows: context.listScanRows,
    });
    return {
      resources: instances,
      listOperationsByParent: (principal, request) => instances.listOperationsByParent(principal, request),
      idOperations: {
        start: (principal, id, call) => instances.start(principal, id, call),
        stop: (principal, id, call) => instances.stop(principal, id, call),
      },
      workHandlers: instances.workHandlers(),
    };
  },
};

/** A copy of the instance in a transitional (or ERROR) state. */
function withState(instance: Instance, state: State): Instance {
  const next = clone(InstanceSchema, instance);
  next.status = create(InstanceStatusSchema, next.status);
  next.status.state = state;
  next.status.reconciling = true;
  return next;
}

/** Deterministic fake addresses per interface, like a cloud's allocator would answer. */
function allocateAddresses(instance: Instance) {
  const seed = createHash('sha256')
    .update(instance.metadata?.id ?? '')
    .digest();
  return (instance.spec?.networkInterfaces ?? []).map((nic, index) =>
    create(NetworkInterfaceStatusSchema, {
      name: nic.name,
      ipAddress: nic.ipAddress !== '' ? nic.ipAddress : `10.${seed[0] ?? 0}.${seed[1] ?? 0}.${(index + 2) % 255}`,
      publicIpAddress: nic.publicIp ? `203.0.113.${(((seed[2] ?? 0) + index) % 254) + 1}` : '',
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
