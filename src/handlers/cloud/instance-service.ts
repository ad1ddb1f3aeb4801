import type { ServiceImpl } from '@connectrpc/connect';
import { InstanceService as InstanceServiceDesc } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { AppError } from '../../errors.js';
import { ResetMaskParseError, resetMaskFromHeaderValues, type ResetMask } from '../../engines/reset-mask/index.js';
import { toOperationMessage } from '../../engines/operations/index.js';
import type { InstanceService } from '../../services/compute/instance-service.js';
import { principalOf, recordedHeaders } from './context.js';

/** `X-ResetMask` (every value, merged); a malformed mask → INVALID_ARGUMENT naming the position. */
export function resetMaskOf(header: Headers): ResetMask {
  try {
    return resetMaskFromHeaderValues(header.get('x-resetmask'));
  } catch (error) {
    if (error instanceof ResetMaskParseError) {
      throw new AppError('invalid_argument', `X-ResetMask: ${error.message}`, { violations: [{ field: 'x-resetmask', message: error.message }] });
    }
    throw error;
  }
}

/** compute.v1.InstanceService: decode → InstanceService (the rules) → encode. */
export function instanceServiceImpl(instances: InstanceService): ServiceImpl<typeof InstanceServiceDesc> {
  return {
    get: (request, context) => instances.get(principalOf(context), request.id),
    getByName: (request, context) => instances.getByName(principalOf(context), request.parentId, request.name),
    async list(request, context) {
      return instances.list(principalOf(context), request);
    },
    async create(request, context) {
      return toOperationMessage(await instances.create(principalOf(context), request, recordedHeaders(context.requestHeader)));
    },
    async update(request, context) {
      const mask = resetMaskOf(context.requestHeader);
      return toOperationMessage(await instances.update(principalOf(context), request, mask, recordedHeaders(context.requestHeader)));
    },
    async delete(request, context) {
      return toOperationMessage(await instances.delete(principalOf(context), request.id, recordedHeaders(context.requestHeader)));
    },
    async start(request, context) {
      return toOperationMessage(await instances.start(principalOf(context), request.id, recordedHeaders(context.requestHeader)));
    },
    async stop(request, context) {
      return toOperationMessage(await instances.stop(principalOf(context), request.id, recordedHeaders(context.requestHeader)));
    },
    async listOperationsByParent(request, context) {
      const page = await instances.listOperationsByParent(principalOf(context), request);
      return { operations: page.items.map(toOperationMessage), nextPageToken: page.nextPageToken };
    },
  };
}
