import type { ServiceImpl } from '@connectrpc/connect';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { toOperationMessage } from '../../engines/operations/index.js';
import type { OperationQueries } from '../../services/cloud/operation-queries.js';
import { endpointKey, principalOf } from './context.js';

/** OperationService on every endpoint; on `<name>.<API_DOMAIN>` it shows only `<name>`'s operations. */
export function operationServiceImpl(queries: OperationQueries): ServiceImpl<typeof OperationService> {
  const servicesOf = (endpoint: string | undefined) => (endpoint === undefined ? undefined : [endpoint]);
  return {
    async get(request, context) {
      return toOperationMessage(await queries.get(principalOf(context), request.id, servicesOf(context.values.get(endpointKey))));
    },
    async list(request, context) {
      const page = await queries.list(principalOf(context), request, servicesOf(context.values.get(endpointKey)));
      return { operations: page.items.map(toOperationMessage), nextPageToken: page.nextPageToken };
    },
  };
}
