import type { DescService } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { toOperationMessage } from '../../engines/operations/index.js';
import type { ParentListRequest } from '../../services/cloud/named-resources.js';
import type { NamedResourceRules, ResourceKindRules } from '../../services/cloud/resource-kind.js';
import { operationCallOf, principalOf, resetMaskOf } from './context.js';

/** Decode → the resource's rules → encode, for Get, GetByName, List, Create, Update (reset mask) and Delete. */
export function namedResourceServiceImpl<Resource, CreateRequest, UpdateRequest>(rules: NamedResourceRules<Resource, CreateRequest, UpdateRequest>) {
  return {
    get: (request: { id: string }, context: HandlerContext) => rules.get(principalOf(context), request.id),
    getByName: (request: { parentId: string; name: string }, context: HandlerContext) => rules.getByName(principalOf(context), request.parentId, request.name),
    list: (request: ParentListRequest, context: HandlerContext) => rules.list(principalOf(context), request),
    create: async (request: CreateRequest, context: HandlerContext) =>
      toOperationMessage(await rules.create(principalOf(context), request, operationCallOf(context))),
    update: async (request: UpdateRequest, context: HandlerContext) =>
      toOperationMessage(await rules.update(principalOf(context), request, resetMaskOf(context), operationCallOf(context))),
    delete: async (request: { id: string }, context: HandlerContext) =>
      toOperationMessage(await rules.delete(principalOf(context), request.id, operationCallOf(context))),
  };
}

/**
 * The service of a declared resource kind (src/services/cloud/resource-kind.ts): the shared named
 * resource RPCs, ListOperationsByParent, and each `{id}` → Operation RPC the kind adds (Start, Stop).
 */
export function resourceKindServiceImpl(rules: ResourceKindRules): Partial<ServiceImpl<DescService>> {
  const idOperations = Object.fromEntries(
    Object.entries(rules.idOperations ?? {}).map(([name, run]) => [
      name,
      async (request: { id: string }, context: HandlerContext) => toOperationMessage(await run(principalOf(context), request.id, operationCallOf(context))),
    ]),
  );
  return {
    ...namedResourceServiceImpl(rules.resources),
    ...idOperations,
    async listOperationsByParent(request: ParentListRequest, context: HandlerContext) {
      const page = await rules.listOperationsByParent(principalOf(context), request);
      return { operations: page.items.map(toOperationMessage), nextPageToken: page.nextPageToken };
    },
  } as unknown as Partial<ServiceImpl<DescService>>;
}
