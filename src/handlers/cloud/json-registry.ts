import { createRegistry, type Registry } from '@bufbuild/protobuf';
import { file_cloud_annotations } from '../../../generated/proto/cloud/annotations_pb.js';
import { file_cloud_common_v1_error } from '../../../generated/proto/cloud/common/v1/error_pb.js';
import { file_cloud_common_v1_metadata } from '../../../generated/proto/cloud/common/v1/metadata_pb.js';
import { file_cloud_common_v1_operation } from '../../../generated/proto/cloud/common/v1/operation_pb.js';
import { file_cloud_common_v1_operation_service } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { file_cloud_common_v1_server_info_service } from '../../../generated/proto/cloud/common/v1/server_info_service_pb.js';
import { file_cloud_compute_v1_instance } from '../../../generated/proto/cloud/compute/v1/instance_pb.js';
import { file_cloud_compute_v1_instance_service } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { file_cloud_iam_v1_auth_public_key } from '../../../generated/proto/cloud/iam/v1/auth_public_key_pb.js';
import { file_cloud_iam_v1_auth_public_key_service } from '../../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { file_cloud_iam_v1_profile_service } from '../../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { file_cloud_iam_v1_project } from '../../../generated/proto/cloud/iam/v1/project_pb.js';
import { file_cloud_iam_v1_project_service } from '../../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { file_cloud_iam_v1_service_account } from '../../../generated/proto/cloud/iam/v1/service_account_pb.js';
import { file_cloud_iam_v1_service_account_service } from '../../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { file_cloud_iam_v1_token_exchange_service } from '../../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import { file_google_rpc_status } from '../../../generated/proto/google/rpc/status_pb.js';

/**
 * Every message of the cloud protos, for the JSON codecs of Connect and gRPC-Web: an Operation packs
 * its resource (and a ServiceError its details) into `google.protobuf.Any`, and JSON can only write
 * an Any whose type it can look up. Without it every Operation-returning RPC over JSON failed after
 * the mutation had committed. Add a file here when a proto file is added.
 */
export const cloudJsonRegistry: Registry = createRegistry(
  file_cloud_annotations,
  file_cloud_common_v1_error,
  file_cloud_common_v1_metadata,
  file_cloud_common_v1_operation,
  file_cloud_common_v1_operation_service,
  file_cloud_common_v1_server_info_service,
  file_cloud_compute_v1_instance,
  file_cloud_compute_v1_instance_service,
  file_cloud_iam_v1_auth_public_key,
  file_cloud_iam_v1_auth_public_key_service,
  file_cloud_iam_v1_profile_service,
  file_cloud_iam_v1_project,
  file_cloud_iam_v1_project_service,
  file_cloud_iam_v1_service_account,
  file_cloud_iam_v1_service_account_service,
  file_cloud_iam_v1_token_exchange_service,
  file_google_rpc_status,
);
