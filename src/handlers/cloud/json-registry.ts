import { createRegistry, type Registry } from '@bufbuild/protobuf';
import { cloudProtoFiles } from '../../../generated/proto/cloud-files.js';

/**
 * Every message of the cloud protos, for the JSON codecs of Connect and gRPC-Web: an Operation packs
 * its resource (and a ServiceError its details) into `google.protobuf.Any`, and JSON can only write
 * an Any whose type it can look up. Without it every Operation-returning RPC over JSON failed after
 * the mutation had committed. The files come from `npm run generate` (generated/proto/cloud-files.ts),
 * so a new proto file is in it with nothing edited here.
 */
export const cloudJsonRegistry: Registry = createRegistry(...cloudProtoFiles);
