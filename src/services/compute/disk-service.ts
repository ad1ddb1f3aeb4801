import { clone, create, fromBinary } from '@bufbuild/protobuf';
import type { Knex } from 'knex';
import { ResourceMetadataSchema } from '../../../generated/proto/cloud/common/v1/metadata_pb.js';
import {
  DiskSchema,
  DiskSpecSchema,
  DiskStatus_State as State,
  DiskStatusSchema,
  type Disk,
  type DiskSpec,
} from '../../../generated/proto/cloud/compute/v1/disk_pb.js';
import {
  CreateDiskRequestSchema,
  DeleteDiskRequestSchema,
  DiskService as DiskServiceDesc,
  UpdateDiskRequestSchema,
  type CreateDiskRequest,
  type UpdateDiskRequest,
} from '../../../generated/proto/cloud/compute/v1/disk_service_pb.js';
import type { AttachedDisk, InstanceSpec } from '../../../generated/proto/cloud/compute/v1/instance_pb.js';
import { AppError, type Violation } from '../../errors.js';
import type { Principal } from '../../auth/principal.js';
import { packOperationRequest, type Operations, type OperationCall, type Work, type WorkHandler } from '../../engines/operations/index.js';
import type { ResetMask } from '../../engines/reset-mask/index.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import { ResourceRepository } from '../../store/repositories/resource-repository.js';
import { invalid, NamedResources, PROJECT_ID_PATTERN, previousOf, requireFields, type ParentCheck, type ParentListRequest } from '../cloud/named-resources.js';
import type { Page } from '../cloud/paging.js';
import type { ResourceKind } from '../cloud/resource-kind.js';

/** The api_service_name of DiskService (compute's, like instances): its operations are served on that endpoint. */
const COMPUTE_SERVICE = 'compute';

/** The table of disks. */
const DISKS_TABLE = 'compute_disks';

/** The id of a disk this server made: `disk-<20 hex>`. Other `disk_id` values of an instance are opaque external references. */
const DISK_ID_PATTERN = /^disk-[0-9a-f]{20}$/;

const DEFAULT_BLOCK_SIZE = 4096n;
const MAX_BLOCK_SIZE = 131_072n;

const WORK = {
  create: 'compute.disk.create',
  update: 'compute.disk.update',
  delete: 'compute.disk.delete',
} as const;

export interface DiskServiceOptions {
  parentExists?: ParentCheck;
  listScanRows: number;
}

/**
 * Every rule of compute disks (docs/cloud-api.md, "Disks"): the named-resource rules all kinds share,
 * the size and block-size rules, and attachment — a disk attached to an instance cannot be deleted,
 * and its status names the instances it is attached to (kept by DiskAttachments in the transaction
 * of each instance change).
 */
class DiskService {
  readonly resources: NamedResources<Disk>;

  constructor(knex: Knex, options: DiskServiceOptions & { operations: Operations }) {
    this.resources = diskResources(knex, options.operations, options);
  }

  get(principal: Principal, id: string): Promise<Disk> {
    return this.resources.get(principal, id);
  }

  getByName(principal: Principal, parentId: string, name: string): Promise<Disk> {
    return this.resources.getByName(principal, parentId, name);
  }

  list(principal: Principal, request: ParentListRequest): Promise<Page<Disk>> {
    return this.resources.list(principal, request);
  }

  /** Creates the disk in state CREATING; its operation's work makes it READY. */
  create(principal: Principal, request: CreateDiskRequest, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    const spec = request.spec ? clone(DiskSpecSchema, request.spec) : create(DiskSpecSchema);
    const operation = { description: 'Create disk', request: packOperationRequest(CreateDiskRequestSchema, request), ...call, work: WORK.create };
    return this.resources.create(principal, { metadata: request.metadata, spec }, operation);
  }

  /** Replaces the disk under the reset mask; the size can grow, never shrink. */
  update(principal: Principal, request: UpdateDiskRequest, mask: ResetMask, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    const operation = { description: 'Update disk', request: packOperationRequest(UpdateDiskRequestSchema, request), ...call, work: WORK.update };
    return this.resources.update(principal, request, mask, operation, (next, stored) => {
      const before = stored.spec?.sizeBytes ?? 0n;
      if ((next.spec?.sizeBytes ?? 0n) < before) throw invalid([{ field: 'spec.size_bytes', message: `cannot shrink below the current ${before}` }]);
      next.status = withState(stored, State.UPDATING).status;
    });
  }

  /** Marks a disk no instance has attached DELETING; its operation's work removes the row. */
  delete(principal: Principal, id: string, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    requireFields({ id });
    return this.resources.mutate(principal, id, async (stored) => {
      const holders = attachedInstances(stored);
      if (holders.length > 0) {
        throw new AppError('failed_precondition', `disk ${id} is attached to ${holders.join(', ')}; detach it first`, {
          resourceId: id,
          detail: { kind: 'bad_resource_state' },
        });
      }
      const request = packOperationRequest(DeleteDiskRequestSchema, create(DeleteDiskRequestSchema, { id }));
      return { next: withState(stored, State.DELETING), operation: { description: 'Delete disk', request, ...call, work: WORK.delete } };
    });
  }

  /**
   * The background work of disk operations: Create and Update settle READY with the provisioned
   * size; Delete removes the row. A cancelled Create removes the disk; a cancelled Update or Delete
   * puts the disk back as it was, keeping the attachments it has now (instances changed meanwhile).
   */
  workHandlers(): Record<string, WorkHandler> {
    const disks = this.resources.repository;
    const restore = async (trx: Knex, work: Work) => {
      const row = await disks.lock(work.resourceId, trx);
      const previous = previousOf(work.payload);
      if (!row || !previous) return;
      const current = this.resources.decode(row);
      const restored = clone(DiskSchema, fromBinary(DiskSchema, previous));
      restored.metadata = restored.metadata ?? create(ResourceMetadataSchema);
      restored.metadata.resourceVersion = current.metadata?.resourceVersion ?? 0n;
      restored.status = create(DiskStatusSchema, restored.status);
      restored.status.readWriteAttachment = current.status?.readWriteAttachment ?? '';
      restored.status.readOnlyAttachments = [...(current.status?.readOnlyAttachments ?? [])];
      await this.resources.save(trx, restored);
    };
    const ready: WorkHandler['complete'] = async (trx, work) => {
      const row = await disks.lock(work.resourceId, trx);
      if (!row) return;
      const disk = withState(this.resources.decode(row), State.READY);
      const status = create(DiskStatusSchema, disk.status);
      status.reconciling = false;
      status.sizeBytes = disk.spec?.sizeBytes ?? 0n;
      status.blockSizeBytes = blockSizeOf(disk.spec);
      disk.status = status;
      await this.resources.save(trx, disk);
    };
    const fail: WorkHandler['fail'] = async (trx, work) => {
      const row = await disks.lock(work.resourceId, trx);
      if (!row) return;
      const failed = withState(this.resources.decode(row), State.ERROR);
      if (failed.status) failed.status.reconciling = false;
      await this.resources.save(trx, failed);
    };
    return {
      [WORK.create]: {
        phases: ['allocating blocks', 'writing the image'],
        complete: ready,
        fail,
        cancel: async (trx, work) => {
          await disks.delete(work.resourceId, trx);
        },
      },
      [WORK.update]: { phases: ['resizing'], complete: ready, fail, cancel: restore },
      [WORK.delete]: {
        phases: ['releasing blocks'],
        complete: async (trx, work) => {
          await disks.delete(work.resourceId, trx);
        },
        cancel: restore,
      },
    };
  }
}

/** The declaration of disks (src/services/cloud/resource-kind.ts): served by the cloud module, counted by the project-delete guard. */
export const diskKind: ResourceKind = {
  service: DiskServiceDesc,
  table: DISKS_TABLE,
  parent: 'project',
  plural: 'disks',
  rules: (context) => {
    const disks = new DiskService(context.knex, { operations: context.operations, parentExists: context.parentExists, listScanRows: context.listScanRows });
    return {
      resources: disks,
      listOperationsByParent: (principal, request) => disks.resources.listOperationsByParent(principal, request),
      workHandlers: disks.workHandlers(),
    };
  },
};

/** The shared rules of disks, also what DiskAttachments reads and saves disks with. */
function diskResources(knex: Knex, operations: Operations, options: DiskServiceOptions): NamedResources<Disk> {
  return new NamedResources(knex, operations, {
    schema: DiskSchema,
    service: COMPUTE_SERVICE,
    idPrefix: 'disk',
    listScanRows: options.listScanRows,
    label: 'disk',
    parentLabel: 'project',
    parentIdPattern: PROJECT_ID_PATTERN,
    repository: new ResourceRepository(knex, DISKS_TABLE),
    initialStatus: () => ({ state: State.CREATING, reconciling: true }),
    parentExists: options.parentExists ?? (async (parentId) => PROJECT_ID_PATTERN.test(parentId)),
    readScope: 'parent',
    specViolations,
    oneOperationAtATime: true,
  });
}

/** One disk an instance spec names, where it names it. */
interface DiskUse {
  diskId: string;
  readOnly: boolean;
  field: string;
}

/** The disks of this server an instance spec names (boot disk first); other ids are external references, not checked. */
function diskUses(spec: InstanceSpec | undefined): DiskUse[] {
  const named: Array<[AttachedDisk | undefined, string]> = [
    [spec?.bootDisk, 'spec.boot_disk.disk_id'],
    ...(spec?.secondaryDisks ?? []).map((disk, index): [AttachedDisk, string] => [disk, `spec.secondary_disks.${index}.disk_id`]),
  ];
  return named.flatMap(([disk, field]) => (disk && DISK_ID_PATTERN.test(disk.diskId) ? [{ diskId: disk.diskId, readOnly: disk.readOnly, field }] : []));
}

/**
 * What disks record about the instances that attach them (docs/cloud-api.md, "Disks"): run in the
 * transaction of every instance change. A `disk_id` of this server's form must name an existing disk
 * of the instance's project (INVALID_ARGUMENT naming the field otherwise); a disk attached read-write
 * to one instance cannot be attached read-write to another (FAILED_PRECONDITION); disks the instance
 * no longer names are freed. Disks are locked in id order, so concurrent attachments serialize
 * without deadlocks.
 */
export class DiskAttachments {
  private readonly disks: NamedResources<Disk>;

  constructor(knex: Knex, operations: Operations) {
    this.disks = diskResources(knex, operations, { listScanRows: 0 });
  }

  /**
   * Brings the disks' attachments from `previous` (undefined on a create) to `next` (undefined once
   * the instance is gone). `strict` false (a cancelled operation putting the instance back) skips
   * what can no longer be attached instead of failing.
   */
  async sync(
    trx: Knex,
    instance: { id: string; projectId: string },
    next: InstanceSpec | undefined,
    previous: InstanceSpec | undefined,
    strict = true,
  ): Promise<void> {
    const wanted = diskUses(next);
    const had = diskUses(previous);
    const ids = [...new Set([...wanted, ...had].map((use) => use.diskId))].sort();
    if (ids.length === 0) return;
    const violations: Violation[] = [];
    const seen = new Map<string, DiskUse>();
    for (const use of wanted) {
      const first = seen.get(use.diskId);
      if (first && !(first.readOnly && use.readOnly)) violations.push({ field: use.field, message: `names disk ${use.diskId} a second time (${first.field})` });
      seen.set(use.diskId, first ?? use);
    }
    for (const id of ids) {
      const row = await this.disks.repository.lock(id, trx);
      const uses = wanted.filter((use) => use.diskId === id);
      const disk = row && row.parent_id === instance.projectId ? this.disks.decode(row) : undefined;
      const state = disk?.status?.state;
      if (!disk || state === State.DELETING) {
        const reason = disk ? `names disk ${id}, which is being deleted` : `names no disk of project ${instance.projectId}`;
        violations.push(...uses.map((use) => ({ field: use.field, message: reason })));
        continue;
      }
      const readWrite = uses.some((use) => !use.readOnly);
      const holder = disk.status?.readWriteAttachment ?? '';
      if (readWrite && holder !== '' && holder !== instance.id) {
        if (!strict) continue;
        throw new AppError('failed_precondition', `disk ${id} is attached read-write to ${holder}; detach it there first`, {
          resourceId: id,
          detail: { kind: 'bad_resource_state' },
        });
      }
      const status = disk.status ? clone(DiskStatusSchema, disk.status) : create(DiskStatusSchema);
      const others = status.readOnlyAttachments.filter((holderId) => holderId !== instance.id);
      status.readOnlyAttachments = uses.length > 0 && !readWrite ? [...others, instance.id] : others;
      if (readWrite) status.readWriteAttachment = instance.id;
      else if (holder === instance.id) status.readWriteAttachment = '';
      if (sameAttachments(disk.status, status)) continue;
      disk.status = status;
      await this.disks.save(trx, disk);
    }
    if (violations.length > 0 && strict) throw invalid(violations);
  }
}

function sameAttachments(a: Disk['status'], b: NonNullable<Disk['status']>): boolean {
  return (a?.readWriteAttachment ?? '') === b.readWriteAttachment && (a?.readOnlyAttachments ?? []).join(',') === b.readOnlyAttachments.join(',');
}

/** The instances a disk is attached to, read-write first. */
function attachedInstances(disk: Disk): string[] {
  const readWrite = disk.status?.readWriteAttachment ?? '';
  return [...(readWrite === '' ? [] : [readWrite]), ...(disk.status?.readOnlyAttachments ?? [])];
}

/** A copy of the disk in a transitional (or final) state. */
function withState(disk: Disk, state: State): Disk {
  const next = clone(DiskSchema, disk);
  next.status = create(DiskStatusSchema, next.status);
  next.status.state = state;
  next.status.reconciling = true;
  return next;
}

/** The block size a spec asks for, 4096 when it leaves it 0. */
function blockSizeOf(spec: DiskSpec | undefined): bigint {
  const asked = spec?.blockSizeBytes ?? 0n;
  return asked === 0n ? DEFAULT_BLOCK_SIZE : asked;
}

function specViolations(spec: DiskSpec | undefined): Violation[] {
  const violations: Violation[] = [];
  const size = spec?.sizeBytes ?? 0n;
  const block = blockSizeOf(spec);
  const asked = spec?.blockSizeBytes ?? 0n;
  if (asked !== 0n && (asked < DEFAULT_BLOCK_SIZE || asked > MAX_BLOCK_SIZE || (asked & (asked - 1n)) !== 0n)) {
    violations.push({ field: 'spec.block_size_bytes', message: 'must be a power of two from 4096 to 131072 (0 means 4096)' });
  } else if (size <= 0n) {
    violations.push({ field: 'spec.size_bytes', message: 'must be a positive number of bytes' });
  } else if (size % block !== 0n) {
    violations.push({ field: 'spec.size_bytes', message: `must be a multiple of the block size ${block}` });
  }
  if (spec?.sourceImageFamily && spec.sourceImageFamily.imageFamily === '') {
    violations.push({ field: 'spec.source_image_family.image_family', message: 'is required when source_image_family is set' });
  }
  return violations;
}
