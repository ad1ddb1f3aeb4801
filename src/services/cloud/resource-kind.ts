import type { DescService } from '@bufbuild/protobuf';
import type { Knex } from 'knex';
import type { Principal } from '../../auth/principal.js';
import type { OperationCall, Operations, WorkHandler } from '../../engines/operations/index.js';
import type { ResetMask } from '../../engines/reset-mask/index.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import type { ParentCheck, ParentListRequest } from './named-resources.js';
import type { Page } from './paging.js';

/** What a resource kind's rules are built from: the store, the operations and the settings of cloud resources. */
export interface ResourceKindContext {
  knex: Knex;
  operations: Operations;
  /** Whether a parent id names a project (IAM's check, holding the project until the transaction ends). */
  parentExists: ParentCheck | undefined;
  /** At most this many rows examined per filtered List page (LIST_FILTER_SCAN_ROWS). */
  listScanRows: number;
  /** Resources of one kind per project, by kind label (QUOTA_INSTANCES_PER_PROJECT for instances). */
  quotaPerProject: Readonly<Record<string, number>>;
}

/**
 * The rules behind a named resource service: Get, GetByName, List, Create, Update (reset mask),
 * Delete and ListOperationsByParent, served alike for every kind (src/handlers/cloud/named-resource-service.ts).
 */
export interface NamedResourceRules<Resource = unknown, CreateRequest = unknown, UpdateRequest = unknown> {
  get(principal: Principal, id: string): Promise<Resource>;
  getByName(principal: Principal, parentId: string, name: string): Promise<Resource>;
  list(principal: Principal, request: ParentListRequest): Promise<Page<Resource>>;
  create(principal: Principal, request: CreateRequest, call: OperationCall): Promise<OperationRow>;
  update(principal: Principal, request: UpdateRequest, mask: ResetMask, call: OperationCall): Promise<OperationRow>;
  delete(principal: Principal, id: string, call: OperationCall): Promise<OperationRow>;
}

/** What a kind adds to the shared rules: its operations list, any id-taking mutations and its background work. */
export interface ResourceKindRules {
  // Each kind takes its own request messages: method parameters compare bivariantly, so they fit `unknown`.
  resources: NamedResourceRules;
  listOperationsByParent(principal: Principal, request: ParentListRequest): Promise<Page<OperationRow>>;
  /** RPCs that take `{id}` and start an operation (InstanceService.Start, Stop), by the method's local name. */
  idOperations?: Record<string, (principal: Principal, id: string, call: OperationCall) => Promise<OperationRow>>;
  workHandlers: Record<string, WorkHandler>;
}

/**
 * A cloud resource kind, declared once (docs/cloud-api.md, "Resource kinds"): its gRPC service
 * (descriptor), its table, its parent, and how its rules are built (service implementation and work
 * handlers). The cloud module serves every declared kind and runs its work; IAM's project-delete guard
 * counts the rows of every kind whose parent is a project. The JSON registry and the CLI's verbs come
 * from the same protos (generated/proto/cloud-files.ts).
 */
export interface ResourceKind {
  service: DescService;
  /** The table its rows live in (the columns of ResourceRepository). */
  table: string;
  /** What its resources are children of. */
  parent: 'project';
  /** Its resources in messages, plural ("instances", "disks"). */
  plural: string;
  rules(context: ResourceKindContext): ResourceKindRules;
}

/** A child relation the project-delete guard counts: the table, and its rows' name in messages. */
export interface ProjectChild {
  table: string;
  plural: string;
}
