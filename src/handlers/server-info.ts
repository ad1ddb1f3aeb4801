import type { ServiceImpl } from '@connectrpc/connect';
import { ServerInfoService } from '../../generated/proto/cloud/common/v1/server_info_service_pb.js';

/** ServerInfoService: the gRPC twin of `GET /api`. */
export function serverInfoService(name: string): [typeof ServerInfoService, Partial<ServiceImpl<typeof ServerInfoService>>] {
  return [ServerInfoService, { getServerInfo: () => ({ name, version: '1.0.0' }) }];
}
