import type { HandlerContext } from '@connectrpc/connect';
import type { Principal } from '../../auth/principal.js';
import { toOperationMessage, type RecordedHeaders } from '../../engines/operations/index.js';
import type { ResetMask } from '../../engines/reset-mask/index.js';
import type { Page } from '../../services/cloud/paging.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import { principalOf, recordedHeaders, resetMaskOf } from './context.js';

/** The rules behind a named cloud resource service (instances, projects, service accounts): one shape, one handler. */
interface NamedResourceRules<Resource, CreateRequest, UpdateRequest> {
  get(principal: Principal, id: string): Promise<Resource>;
  getByName(principal: Principal, parentId: string, name: string): Promise<Resource>;
  list(principal: Principal, request: { parentId: string; pageSize: bigint; pageToken: string; filter: string }): Promise<Page<Resource>>;
  create(principal: Principal, request: CreateRequest, headers: RecordedHeaders): Promise<OperationRow>;
  update(principal: Principal, request: UpdateRequest, mask: ResetMask, headers: RecordedHeaders): Promise<OperationRow>;
  delete(principal: Principal, id: string, headers: RecordedHeaders): Promise<OperationRow>;
}

/** Decode → the resource's rules → encode, for Get, GetByName, List, Create, Update (reset mask) and Delete. */
export function namedResourceServiceImpl<Resource, CreateRequest, UpdateRequest>(rules: NamedResourceRules<Resource, CreateRequest, UpdateRequest>) {
  return {
    get: (request: { id: string }, context: HandlerContext) => rules.get(principalOf(context), request.id),
    getByName: (request: { parentId: string; name: string }, context: HandlerContext) => rules.getByName(principalOf(context), request.parentId, request.name),
    list: (request: { parentId: string; pageSize: bigint; pageToken: string; filter: string }, context: HandlerContext) =>
      rules.list(principalOf(context), request),
    create: async (request: CreateRequest, context: HandlerContext) =>
      toOperationMessage(await rules.create(principalOf(context), request, recordedHeaders(context.requestHeader))),
    update: async (request: UpdateRequest, context: HandlerContext) =>
      toOperationMessage(await rules.update(principalOf(context), request, resetMaskOf(context), recordedHeaders(context.requestHeader))),
    delete: async (request: { id: string }, context: HandlerContext) =>
      toOperationMessage(await rules.delete(principalOf(context), request.id, recordedHeaders(context.requestHeader))),
  };
}
