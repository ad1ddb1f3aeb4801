import { randomBytes } from 'node:crypto';
import { create, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Knex } from 'knex';
import { ProjectSchema, type Project } from '../../../generated/proto/cloud/iam/v1/project_pb.js';
import {
  CreateProjectRequestSchema,
  DeleteProjectRequestSchema,
  UpdateProjectRequestSchema,
  type CreateProjectRequest,
  type UpdateProjectRequest,
} from '../../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { AppError } from '../../errors.js';
import type { Principal } from '../../auth/principal.js';
import { packOperationRequest, type Operations } from '../../engines/operations/index.js';
import type { ResetMask } from '../../engines/reset-mask/index.js';
import { DEFAULT_LIST_SCAN_ROWS } from '../../store/filtered-list.js';
import { resourceDocument } from '../../store/resource-document.js';
import { ResourceRepository } from '../../store/repositories/resource-repository.js';
import { TenantRepository } from '../../store/repositories/tenant-repository.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import { NamedResources } from '../cloud/named-resources.js';
import type { Page } from '../cloud/paging.js';
import type { ProjectChild } from '../cloud/resource-kind.js';
import type { OperationCall } from '../../engines/operations/index.js';

/** The api_service_name of the IAM resource services: their operations are served on this endpoint. */
export const IAM_SERVICE = 'cpl.iam';

const TENANT_ID_PATTERN = /^tenant-[A-Za-z0-9]{1,64}$/;
const DEFAULT_PROJECT_NAME = 'default';

/**
 * Projects (docs/iam.md): children of the installation's one tenant, made at first start together
 * with a project named `default`. A project is its own read scope (a service account may read its
 * project) while creating, changing and deleting projects acts on the tenant (admins only).
 */
export class ProjectService {
  readonly resources: NamedResources<Project>;
  private readonly tenants: TenantRepository;
  private tenant: string | undefined;

  constructor(
    private readonly knex: Knex,
    operations: Operations,
    /** At most this many rows examined per filtered List page. */
    listScanRows = DEFAULT_LIST_SCAN_ROWS,
    /** The resource kinds of other areas that live in a project (compute's instances and disks): a project holding any is not deleted. */
    children: readonly ProjectChild[] = [],
  ) {
    this.tenants = new TenantRepository(knex);
    const repository = new ResourceRepository(knex, 'iam_projects');
    const held = [{ table: 'iam_service_accounts', plural: 'service accounts' }, ...children].map((child) => ({
      plural: child.plural,
      rows: new ResourceRepository(knex, child.table),
    }));
    this.resources = new NamedResources(knex, operations, {
      schema: ProjectSchema,
      service: IAM_SERVICE,
      idPrefix: 'project',
      listScanRows,
      label: 'project',
      parentLabel: 'tenant',
      parentIdPattern: TENANT_ID_PATTERN,
      repository,
      initialStatus: () => ({ active: true }),
      parentExists: async (parentId) => parentId === this.tenantId,
      readScope: 'self',
      beforeDelete: async (row, trx) => {
        const counts: string[] = [];
        for (const child of held) {
          const count = await child.rows.countByParent(row.id, trx);
          if (count > 0) counts.push(`${count} ${child.plural}`);
        }
        if (counts.length > 0) {
          throw new AppError('failed_precondition', `project ${row.id} still holds ${counts.join(', ')}; delete them first`, {
            resourceId: row.id,
            detail: { kind: 'bad_resource_state' },
          });
        }
      },
    });
  }

  /** The installation's tenant id (known after `ensureTenant`). */
  get tenantId(): string {
    if (!this.tenant) throw new Error('the tenant is not loaded yet (call ensureTenant first)');
    return this.tenant;
  }

  /**
   * Makes the tenant and the `default` project at first start. Safe when several processes start
   * at once on one database: the tenant row is a singleton and only the process whose insert wins
   * makes the project, in the same transaction.
   */
  async ensureTenant(): Promise<string> {
    this.tenant = await this.knex.transaction(async (trx) => {
      const candidate = `tenant-${randomBytes(10).toString('hex')}`;
      if (await this.tenants.insertIfNone(candidate, trx)) {
        const id = `project-${randomBytes(10).toString('hex')}`;
        const now = timestampFromDate(new Date());
        const project = create(ProjectSchema, {
          metadata: { id, parentId: candidate, name: DEFAULT_PROJECT_NAME, resourceVersion: 1n, createdAt: now, updatedAt: now },
          spec: { description: 'Made at first start' },
          status: { active: true },
        });
        await this.resources.repository.insert(
          {
            id,
            parent_id: candidate,
            name: DEFAULT_PROJECT_NAME,
            resource_version: 1,
            data: toBinary(ProjectSchema, project),
            doc: resourceDocument(ProjectSchema, project),
          },
          trx,
        );
      }
      const tenant = await this.tenants.get(trx);
      if (!tenant) throw new Error('no tenant after insert');
      return tenant;
    });
    return this.tenant;
  }

  /**
   * Whether a project exists, holding a share lock until `trx` ends so the project cannot be
   * deleted while a child (instance, service account) is being created in it. The cloud module's
   * ParentCheck.
   */
  exists(projectId: string, trx: Knex): Promise<boolean> {
    return this.resources.repository.existsShared(projectId, trx);
  }

  get(principal: Principal, id: string): Promise<Project> {
    return this.resources.get(principal, id);
  }

  /** An empty `parent_id` means the tenant (there is only one, and clients need not know its id). */
  getByName(principal: Principal, parentId: string, name: string): Promise<Project> {
    return this.resources.getByName(principal, parentId || this.tenantId, name);
  }

  /** An empty `parent_id` means the tenant. */
  list(principal: Principal, request: { parentId: string; pageSize: bigint; pageToken: string; filter: string }): Promise<Page<Project>> {
    return this.resources.list(principal, { ...request, parentId: request.parentId || this.tenantId });
  }

  /** An empty `metadata.parent_id` means the tenant (there is only one). */
  create(principal: Principal, request: CreateProjectRequest, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    const metadata = request.metadata ? { ...request.metadata, parentId: request.metadata.parentId || this.tenantId } : { parentId: this.tenantId, name: '' };
    return this.resources.create(
      principal,
      { metadata: metadata as typeof request.metadata, spec: request.spec },
      {
        description: 'Create project',
        request: packOperationRequest(CreateProjectRequestSchema, request),
        ...call,
      },
    );
  }

  update(principal: Principal, request: UpdateProjectRequest, mask: ResetMask, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    return this.resources.update(principal, request, mask, {
      description: 'Update project',
      request: packOperationRequest(UpdateProjectRequestSchema, request),
      ...call,
    });
  }

  delete(principal: Principal, id: string, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    return this.resources.delete(principal, id, {
      description: 'Delete project',
      request: packOperationRequest(DeleteProjectRequestSchema, create(DeleteProjectRequestSchema, { id })),
      ...call,
    });
  }
}
