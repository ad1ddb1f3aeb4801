import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { toOperationMessage } from '../../engines/operations/index.js';
import type { CallLimits, OperationQueries } from '../../services/cloud/operation-queries.js';
import { endpointKey, principalOf } from './context.js';

/** OperationService on every endpoint; on `<name>.<API_DOMAIN>` it shows only `<name>`'s operations. */
export function operationServiceImpl(queries: OperationQueries): ServiceImpl<typeof OperationService> {
  const servicesOf = (endpoint: string | undefined) => (endpoint === undefined ? undefined : [endpoint]);
  const limitsOf = (context: HandlerContext): CallLimits => ({ deadlineMs: context.timeoutMs(), signal: context.signal });
  return {
    async get(request, context) {
      return toOperationMessage(await queries.get(principalOf(context), request.id, servicesOf(context.values.get(endpointKey))));
    },
    async list(request, context) {
      const page = await queries.list(principalOf(context), request, servicesOf(context.values.get(endpointKey)));
      return { operations: page.items.map(toOperationMessage), nextPageToken: page.nextPageToken };
    },
    async cancel(request, context) {
      return toOperationMessage(await queries.cancel(principalOf(context), request.id, servicesOf(context.values.get(endpointKey)), limitsOf(context)));
    },
    async wait(request, context) {
      const timeout = request.timeout;
      // A negative duration has a negative `seconds` or `nanos`; the service refuses it.
      const timeoutMs = timeout ? Number(timeout.seconds) * 1000 + Math.ceil(timeout.nanos / 1_000_000) : 0;
      const row = await queries.wait(principalOf(context), { id: request.id, timeoutMs }, servicesOf(context.values.get(endpointKey)), limitsOf(context));
      return toOperationMessage(row);
    },
  };
}
