import { create } from '@bufbuild/protobuf';
import { GetProfileResponseSchema, type GetProfileResponse } from '../../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { AppError } from '../../errors.js';
import type { Principal } from '../../auth/principal.js';
import type { UserService } from '../user-service.js';
import type { ServiceAccountService } from './service-account-service.js';

/**
 * ProfileService (docs/iam.md): who the server takes the caller for. A user gets `user_profile` (id
 * `useraccount-<user id>`, attributes `name` and `is_admin`; no federation in this server), a
 * service account its own resource, and a call without a token `anonymous_profile`.
 */
export class ProfileService {
  constructor(
    private readonly users: UserService,
    private readonly accounts: ServiceAccountService,
  ) {}

  async get(principal: Principal | undefined): Promise<GetProfileResponse> {
    if (!principal) return create(GetProfileResponseSchema, { profile: { case: 'anonymousProfile', value: {} } });
    if (principal.kind === 'user') {
      const user = await this.users.get({ userId: principal.userId }, principal.userId);
      return create(GetProfileResponseSchema, {
        profile: { case: 'userProfile', value: { id: principal.id, attributes: { name: user.name, is_admin: user.isAdmin } } },
      });
    }
    const account = await this.accounts.find(principal.id);
    if (!account) throw new AppError('unauthenticated', 'the service account no longer exists');
    return create(GetProfileResponseSchema, { profile: { case: 'serviceAccountProfile', value: { info: account } } });
  }
}
