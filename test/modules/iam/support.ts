import { ProjectService } from '../../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { ServiceAccountService } from '../../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { AuthPublicKeyService } from '../../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { TokenExchangeService } from '../../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import { signServiceAccountJwt } from '../../../src/engines/service-account-jwt/index.js';
import { GRANT_TYPE_TOKEN_EXCHANGE, TOKEN_TYPE_ACCESS_TOKEN, TOKEN_TYPE_JWT } from '../../../src/services/iam/token-exchange.js';
import type { GrpcTestClient } from '../../support/grpc.js';

export interface ServiceAccountKey {
  serviceAccountId: string;
  projectId: string;
  keyId: string;
  privateKey: string;
}

/** Creates a project as `token` (an admin) and answers its id; the operation is already complete. */
export async function createProject(grpc: GrpcTestClient, token: string, name: string): Promise<string> {
  const { message } = await grpc.call(ProjectService.method.create, { metadata: { name } }, { token });
  expect(message.status?.code).toBe(0);
  return message.resourceId;
}

/** A service account in `projectId` with a generated key. */
export async function createServiceAccountWithKey(grpc: GrpcTestClient, token: string, projectId: string, name: string): Promise<ServiceAccountKey> {
  const { message: operation } = await grpc.call(ServiceAccountService.method.create, { metadata: { parentId: projectId, name } }, { token });
  expect(operation.status?.code).toBe(0);
  const { message: generated } = await grpc.call(AuthPublicKeyService.method.generate, { spec: { serviceAccountId: operation.resourceId } }, { token });
  return { serviceAccountId: operation.resourceId, projectId, keyId: generated.key?.metadata?.id ?? '', privateKey: generated.privateKey };
}

/** The JWT a service account signs for one exchange. */
export function jwtOf(key: ServiceAccountKey, ttlSeconds?: number): string {
  return signServiceAccountJwt({ serviceAccountId: key.serviceAccountId, keyId: key.keyId, privateKey: key.privateKey }, { ttlSeconds });
}

/** The RFC 8693 fields of an exchange of `jwt` (gRPC names). */
export function exchangeRequest(jwt: string) {
  return { grantType: GRANT_TYPE_TOKEN_EXCHANGE, requestedTokenType: TOKEN_TYPE_ACCESS_TOKEN, subjectToken: jwt, subjectTokenType: TOKEN_TYPE_JWT };
}

/** Exchanges the key's JWT over gRPC and answers the access token. */
export async function accessTokenOf(grpc: GrpcTestClient, key: ServiceAccountKey): Promise<string> {
  const { message } = await grpc.call(TokenExchangeService.method.exchange, exchangeRequest(jwtOf(key)));
  return message.accessToken;
}

/** POST /oauth2/token/exchange with a form (or a raw body and content type). */
export async function exchangeOverHttp(url: string, form: Record<string, string> | string, contentType = 'application/x-www-form-urlencoded') {
  const body = typeof form === 'string' ? form : new URLSearchParams(form).toString();
  const response = await fetch(`${url}/oauth2/token/exchange`, { method: 'POST', headers: { 'content-type': contentType }, body });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

/** The HTTP form of an exchange of `jwt`. */
export function exchangeForm(jwt: string): Record<string, string> {
  return { grant_type: GRANT_TYPE_TOKEN_EXCHANGE, requested_token_type: TOKEN_TYPE_ACCESS_TOKEN, subject_token: jwt, subject_token_type: TOKEN_TYPE_JWT };
}
