import type { ServiceImpl } from '@connectrpc/connect';
import { ProjectService as ProjectServiceDesc } from '../../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { ServiceAccountService as ServiceAccountServiceDesc } from '../../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { AuthPublicKeyService as AuthPublicKeyServiceDesc } from '../../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { ProfileService as ProfileServiceDesc } from '../../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { toOperationMessage } from '../../engines/operations/index.js';
import type { ProjectService } from '../../services/iam/project-service.js';
import type { ServiceAccountService } from '../../services/iam/service-account-service.js';
import type { PublicKeyService } from '../../services/iam/public-key-service.js';
import type { ProfileService } from '../../services/iam/profile-service.js';
import { operationCallOf, principalKey, principalOf } from '../cloud/context.js';
import { namedResourceServiceImpl } from '../cloud/named-resource-service.js';

/** iam.v1.ProjectService: decode → ProjectService (the rules) → encode. */
export function projectServiceImpl(projects: ProjectService): ServiceImpl<typeof ProjectServiceDesc> {
  return namedResourceServiceImpl(projects);
}

/** iam.v1.ServiceAccountService: decode → ServiceAccountService → encode. */
export function serviceAccountServiceImpl(accounts: ServiceAccountService): ServiceImpl<typeof ServiceAccountServiceDesc> {
  return namedResourceServiceImpl(accounts);
}

/** iam.v1.AuthPublicKeyService: decode → PublicKeyService → encode. */
export function authPublicKeyServiceImpl(keys: PublicKeyService): ServiceImpl<typeof AuthPublicKeyServiceDesc> {
  return {
    get: (request, context) => keys.get(principalOf(context), request.id),
    list: (request, context) => keys.list(principalOf(context), request),
    async create(request, context) {
      return toOperationMessage(await keys.create(principalOf(context), request, operationCallOf(context)));
    },
    // No recorded headers: the idempotency key unseals the private key kept for a retry (createIdempotencyInterceptor).
    generate: (request, context) => keys.generate(principalOf(context), request, { ...operationCallOf(context), headers: {} }),
    async activate(request, context) {
      return toOperationMessage(await keys.activate(principalOf(context), request.id, operationCallOf(context)));
    },
    async deactivate(request, context) {
      return toOperationMessage(await keys.deactivate(principalOf(context), request.id, operationCallOf(context)));
    },
    async delete(request, context) {
      return toOperationMessage(await keys.delete(principalOf(context), request.id, operationCallOf(context)));
    },
  };
}

/** iam.v1.ProfileService: the caller's profile (anonymous when the request had no token). */
export function profileServiceImpl(profiles: ProfileService): ServiceImpl<typeof ProfileServiceDesc> {
  return {
    get: (_request, context) => profiles.get(context.values.get(principalKey)),
  };
}
