import { AppError } from '../../errors.js';
import { authorize, type Principal } from '../../auth/principal.js';
import type { Operations } from '../../engines/operations/index.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import { requireFields } from './named-resources.js';
import { decodePageToken, pageFrom, pageSize, type Page } from './paging.js';

/**
 * OperationService's rules: an operation is visible on the endpoint of the service that started
 * it (`services`: undefined = every endpoint) to principals who may read its parent.
 */
export class OperationQueries {
  constructor(private readonly operations: Operations) {}

  async get(principal: Principal, id: string, services: readonly string[] | undefined): Promise<OperationRow> {
    requireFields({ id });
    const row = await this.operations.get(id);
    if (!row || (services !== undefined && !services.includes(row.service))) {
      throw new AppError('not_found', `operation ${id} not found`, { resourceId: id });
    }
    authorize(principal, 'read', row.parent_id);
    return row;
  }

  async list(
    principal: Principal,
    request: { resourceId: string; pageSize: bigint; pageToken: string },
    services: readonly string[] | undefined,
  ): Promise<Page<OperationRow>> {
    requireFields({ resource_id: request.resourceId });
    const size = pageSize(request.pageSize);
    const scope = `operations:${request.resourceId}:${services?.join(',') ?? '*'}`;
    const before = decodePageToken(scope, request.pageToken);
    const rows = await this.operations.list({ resourceId: request.resourceId, services, beforeSeq: before, limit: size + 1 });
    const page = pageFrom(rows, size, scope);
    for (const parentId of new Set(page.items.map((row) => row.parent_id))) authorize(principal, 'read', parentId);
    return page;
  }
}
