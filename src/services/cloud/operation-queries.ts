import { AppError } from '../../errors.js';
import { authorize, type Principal } from '../../auth/principal.js';
import type { Operations } from '../../engines/operations/index.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import { decodePageToken, encodePageToken, pageSize } from './paging.js';

/**
 * OperationService's rules: an operation is visible on the endpoint of the service that started
 * it (`services`: undefined = every endpoint) to principals who may read its parent.
 */
export class OperationQueries {
  constructor(private readonly operations: Operations) {}

  async get(principal: Principal, id: string, services: readonly string[] | undefined): Promise<OperationRow> {
    if (id === '') throw new AppError('invalid_argument', 'id is required', { violations: [{ field: 'id', message: 'is required' }] });
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
  ): Promise<{ items: OperationRow[]; nextPageToken: string }> {
    if (request.resourceId === '') {
      throw new AppError('invalid_argument', 'resource_id is required', { violations: [{ field: 'resource_id', message: 'is required' }] });
    }
    const size = pageSize(request.pageSize);
    const scope = `operations:${request.resourceId}:${services?.join(',') ?? '*'}`;
    const before = decodePageToken(scope, request.pageToken);
    const rows = await this.operations.list({ resourceId: request.resourceId, services, beforeSeq: before, limit: size + 1 });
    const page = rows.slice(0, size);
    for (const parentId of new Set(page.map((row) => row.parent_id))) authorize(principal, 'read', parentId);
    const last = page[page.length - 1];
    return { items: page, nextPageToken: rows.length > size && last ? encodePageToken(scope, last.seq) : '' };
  }
}
