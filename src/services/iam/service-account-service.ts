import { create } from '@bufbuild/protobuf';
import type { Knex } from 'knex';
import { ServiceAccountSchema, ServiceAccountStatusSchema, type ServiceAccount } from '../../../generated/proto/cloud/iam/v1/service_account_pb.js';
import {
  CreateServiceAccountRequestSchema,
  DeleteServiceAccountRequestSchema,
  UpdateServiceAccountRequestSchema,
  type CreateServiceAccountRequest,
  type UpdateServiceAccountRequest,
} from '../../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import type { Principal } from '../../auth/principal.js';
import { packOperationRequest, type Operations } from '../../engines/operations/index.js';
import type { ResetMask } from '../../engines/reset-mask/index.js';
import { DEFAULT_LIST_SCAN_ROWS } from '../../store/filtered-list.js';
import { ResourceRepository } from '../../store/repositories/resource-repository.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import { NamedResources, PROJECT_ID_PATTERN, type ParentCheck } from '../cloud/named-resources.js';
import { IAM_SERVICE } from './project-service.js';
import type { Page } from '../cloud/paging.js';
import type { OperationCall } from '../../engines/operations/index.js';

/**
 * Service accounts (docs/iam.md): non-human identities living in a project. Everything about one
 * is decided by its project: a service account of that project may read, create, change and
 * delete accounts there (itself included), and nothing elsewhere.
 */
export class ServiceAccountService {
  readonly resources: NamedResources<ServiceAccount>;

  constructor(
    private readonly knex: Knex,
    operations: Operations,
    projectExists: ParentCheck,
    /** At most this many rows examined per filtered List page. */
    listScanRows = DEFAULT_LIST_SCAN_ROWS,
  ) {
    this.resources = new NamedResources(knex, operations, {
      schema: ServiceAccountSchema,
      service: IAM_SERVICE,
      idPrefix: 'serviceaccount',
      listScanRows,
      label: 'service account',
      parentLabel: 'project',
      parentIdPattern: PROJECT_ID_PATTERN,
      repository: new ResourceRepository(knex, 'iam_service_accounts'),
      initialStatus: () => ({ active: true }),
      parentExists: projectExists,
      readScope: 'parent',
    });
  }

  /** The account when it exists (active or not); used by sign-in paths that apply their own rules. */
  async find(id: string, trx?: Knex): Promise<ServiceAccount | undefined> {
    const row = await this.resources.repository.findById(id, trx);
    return row ? this.resources.decode(row) : undefined;
  }

  /**
   * Turns an account on or off. No RPC does this in this version (contracts/proto/cloud/iam/v1 gives ServiceAccount no
   * Activate/Deactivate); it is the operator's switch and the tests' way to make an inactive account.
   */
  async setActive(id: string, active: boolean): Promise<void> {
    await this.knex.transaction(async (trx) => {
      const row = await this.resources.repository.lock(id, trx);
      if (!row) throw this.resources.notFound(id);
      const account = this.resources.decode(row);
      account.status = create(ServiceAccountStatusSchema, { active });
      await this.resources.save(trx, account);
    });
  }

  get(principal: Principal, id: string): Promise<ServiceAccount> {
    return this.resources.get(principal, id);
  }

  getByName(principal: Principal, parentId: string, name: string): Promise<ServiceAccount> {
    return this.resources.getByName(principal, parentId, name);
  }

  list(principal: Principal, request: { parentId: string; pageSize: bigint; pageToken: string; filter: string }): Promise<Page<ServiceAccount>> {
    return this.resources.list(principal, request);
  }

  create(principal: Principal, request: CreateServiceAccountRequest, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    return this.resources.create(principal, request, {
      description: 'Create service account',
      request: packOperationRequest(CreateServiceAccountRequestSchema, request),
      ...call,
    });
  }

  update(principal: Principal, request: UpdateServiceAccountRequest, mask: ResetMask, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    return this.resources.update(principal, request, mask, {
      description: 'Update service account',
      request: packOperationRequest(UpdateServiceAccountRequestSchema, request),
      ...call,
    });
  }

  /** Deletes the account; its keys go with it (foreign key cascade) and its tokens stop resolving. */
  delete(principal: Principal, id: string, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    return this.resources.delete(principal, id, {
      description: 'Delete service account',
      request: packOperationRequest(DeleteServiceAccountRequestSchema, create(DeleteServiceAccountRequestSchema, { id })),
      ...call,
    });
  }
}
