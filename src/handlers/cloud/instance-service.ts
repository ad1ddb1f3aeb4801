import type { ServiceImpl } from '@connectrpc/connect';
import { InstanceService as InstanceServiceDesc } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { toOperationMessage } from '../../engines/operations/index.js';
import type { InstanceService } from '../../services/compute/instance-service.js';
import { principalOf, recordedHeaders } from './context.js';
import { namedResourceServiceImpl } from './named-resource-service.js';

/** compute.v1.InstanceService: decode → InstanceService (the rules) → encode. */
export function instanceServiceImpl(instances: InstanceService): ServiceImpl<typeof InstanceServiceDesc> {
  return {
    ...namedResourceServiceImpl(instances),
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
