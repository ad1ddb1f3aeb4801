import { createHash, createPublicKey, generateKeyPair, randomBytes, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { Knex } from 'knex';
import {
  AuthPublicKeySchema,
  AuthPublicKeyStatus_Algorithm as Algorithm,
  AuthPublicKeyStatusSchema,
  type AuthPublicKey,
} from '../../../generated/proto/cloud/iam/v1/auth_public_key_pb.js';
import {
  ActivateAuthPublicKeyRequestSchema,
  CreateAuthPublicKeyRequestSchema,
  DeactivateAuthPublicKeyRequestSchema,
  DeleteAuthPublicKeyRequestSchema,
  GenerateAuthPublicKeyRequestSchema,
  GenerateAuthPublicKeyResponseSchema,
  type CreateAuthPublicKeyRequest,
  type GenerateAuthPublicKeyRequest,
} from '../../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import type { ResourceMetadata } from '../../../generated/proto/cloud/common/v1/metadata_pb.js';
import { AppError, type Violation } from '../../errors.js';
import { authorize, type Principal } from '../../auth/principal.js';
import { packOperationRequest, type Operations, type OperationCall } from '../../engines/operations/index.js';
import type { JwtPublicKey } from '../../engines/service-account-jwt/index.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';
import { PublicKeyRepository, type PublicKeyRow } from '../../store/repositories/public-key-repository.js';
import { DEFAULT_LIST_SCAN_ROWS } from '../../store/filtered-list.js';
import { resourceDocument } from '../../store/resource-document.js';
import { onUniqueViolation } from '../../store/unique-violation.js';
import { requiredConditions } from '../../engines/filter/index.js';
import { filteredScope, listFilter } from '../cloud/list-filter.js';
import {
  beginOperation,
  bumpVersion,
  invalid,
  nameViolations,
  requiredViolations as required,
  requireFields,
  type OperationInput,
} from '../cloud/named-resources.js';
import { boundedPageFrom, decodePageToken, pageFrom, pageSize, type Page } from '../cloud/paging.js';
import { IAM_SERVICE } from './project-service.js';
import type { ServiceAccountService } from './service-account-service.js';

const generateKeyPairAsync = promisify(generateKeyPair);

/** RSA moduli accepted for uploaded keys; generated keys are RSA 2048. */
const ALGORITHM_BY_BITS: Record<number, Algorithm> = { 2048: Algorithm.RSA_2048, 3072: Algorithm.RSA_3072, 4096: Algorithm.RSA_4096 };
const PEM_MAX = 16 * 1024;
const FILTER = /^\s*service_account_id\s*=\s*"([^"]*)"\s*$/;

/** A validated public key: the normalized PEM, its fingerprint and algorithm. */
export interface ParsedPublicKey {
  pem: string;
  fingerprint: string;
  algorithm: Algorithm;
  keyObject: KeyObject;
}

/**
 * Reads an uploaded public key: it must be an RSA public key (2048, 3072 or 4096 bits) in PEM
 * (SubjectPublicKeyInfo `BEGIN PUBLIC KEY` or PKCS#1 `BEGIN RSA PUBLIC KEY`). A private key is
 * refused outright, so nobody uploads one by mistake. The fingerprint is `SHA256:` + the base64 of
 * the SHA-256 of the DER SubjectPublicKeyInfo (as OpenSSH prints fingerprints).
 */
function parsePublicKeyPem(data: string, field = 'spec.data'): ParsedPublicKey {
  const fail = (message: string) => invalid([{ field, message }]);
  if (data.length > PEM_MAX) throw fail(`must be at most ${PEM_MAX} characters`);
  if (/PRIVATE KEY-----/.test(data)) throw fail('is a private key; upload the public key only (and keep the private key secret)');
  if (!/^\s*-----BEGIN (RSA )?PUBLIC KEY-----[\s\S]+-----END (RSA )?PUBLIC KEY-----\s*$/.test(data))
    throw fail('must be a PEM public key (-----BEGIN PUBLIC KEY-----)');
  let key: KeyObject;
  try {
    key = createPublicKey({ key: data, format: 'pem' });
  } catch {
    throw fail('is not a readable PEM public key');
  }
  if (key.asymmetricKeyType !== 'rsa') throw fail(`must be an RSA key, got ${key.asymmetricKeyType ?? 'unknown'}`);
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  const algorithm = ALGORITHM_BY_BITS[bits];
  if (algorithm === undefined) throw fail(`must be an RSA key of 2048, 3072 or 4096 bits, got ${bits}`);
  const der = key.export({ type: 'spki', format: 'der' });
  return {
    pem: key.export({ type: 'spki', format: 'pem' }).toString(),
    fingerprint: `SHA256:${createHash('sha256').update(der).digest('base64').replace(/=+$/, '')}`,
    algorithm,
    keyObject: key,
  };
}

/**
 * Service-account public keys (cloud.iam.v1.AuthPublicKeyService, docs/iam.md): uploaded (PEM) or generated (RSA
 * 2048, the private key returned once and never stored), activated, deactivated, deleted. A key
 * lives in its account's project and follows that project's access rules. The token exchange reads
 * keys through `findForExchange`.
 */
export class PublicKeyService {
  private readonly keys: PublicKeyRepository;

  constructor(
    private readonly knex: Knex,
    private readonly operations: Operations,
    private readonly accounts: ServiceAccountService,
    /** At most this many rows examined per filtered List page. */
    private readonly listScanRows = DEFAULT_LIST_SCAN_ROWS,
  ) {
    this.keys = new PublicKeyRepository(knex);
  }

  async get(principal: Principal, id: string): Promise<AuthPublicKey> {
    requireFields({ id });
    const row = await this.keys.findById(id);
    if (!row) throw keyNotFound(id);
    authorize(principal, 'read', row.parent_id);
    return decode(row);
  }

  /**
   * A project's keys, those matching `filter` when one is given (docs/cloud-api.md, "List filters");
   * `service_account_id = "<id>"` (the one filter of earlier releases, now a spelling of
   * `spec.service_account_id`) narrows the walk to that account's keys.
   */
  async list(principal: Principal, request: { parentId: string; pageSize: bigint; pageToken: string; filter: string }): Promise<Page<AuthPublicKey>> {
    requireFields({ parent_id: request.parentId });
    const filter = listFilter(request.filter, AuthPublicKeySchema, { aliases: { service_account_id: 'spec.service_account_id' } });
    const account = requiredConditions(filter).find(
      (condition) => condition.kind === 'compare' && condition.operator === '=' && condition.path.join('.') === 'spec.serviceAccountId',
    );
    const serviceAccountId = account?.kind === 'compare' ? String(account.value) : undefined;
    const size = pageSize(request.pageSize);
    // The scope of the one filter of earlier releases stays what it was, so its issued tokens stay valid.
    const legacy = filter !== undefined && FILTER.test(request.filter);
    const scope =
      legacy || filter === undefined
        ? `publickey:${request.parentId}:${serviceAccountId ?? ''}`
        : filteredScope(`publickey:${request.parentId}:`, request.filter);
    const after = decodePageToken(scope, request.pageToken);
    authorize(principal, 'read', request.parentId);
    if (filter === undefined || legacy) {
      const rows = await this.keys.list(request.parentId, serviceAccountId, after, size + 1);
      return pageFrom(rows, size, scope, decode);
    }
    const { rows, resumeAfter } = await this.keys.listFiltered({
      parentId: request.parentId,
      serviceAccountId,
      afterSeq: after,
      limit: size + 1,
      filter,
      scanRows: this.listScanRows,
    });
    return boundedPageFrom(rows, size, scope, decode, resumeAfter);
  }

  /** Stores an uploaded public key (the caller keeps the private key). */
  async create(principal: Principal, request: CreateAuthPublicKeyRequest, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    const accountId = request.spec?.serviceAccountId ?? '';
    const data = request.spec?.data ?? '';
    const violations = [
      ...required({ 'spec.service_account_id': accountId, 'spec.data': data }),
      ...expiryViolations('spec.expires_at', request.spec?.expiresAt),
    ];
    violations.push(...nameViolations('metadata.name', request.metadata?.name ?? ''));
    if (violations.length > 0) throw invalid(violations);
    const parsed = parsePublicKeyPem(data);
    const { row } = await this.insert(principal, request.metadata, {
      accountId,
      parsed,
      description: request.spec?.description ?? '',
      expiresAt: request.spec?.expiresAt,
      operation: { description: 'Create public key', request: packOperationRequest(CreateAuthPublicKeyRequestSchema, request), ...call },
    });
    return row;
  }

  /**
   * Generates an RSA 2048 key pair and stores the public half. The private key is in the answer
   * only: it is not logged and not in the operation (its request has no secret). A request with an
   * `X-Idempotency-Key` keeps the answer with the key, sealed under it (PendingKey.answer), so a
   * retry after a lost answer gets the same key pair instead of making a second key.
   */
  async generate(
    principal: Principal,
    request: GenerateAuthPublicKeyRequest,
    call: OperationCall = { headers: {} },
  ): Promise<{ key: AuthPublicKey; privateKey: string }> {
    const accountId = request.spec?.serviceAccountId ?? '';
    const violations = [...required({ 'spec.service_account_id': accountId }), ...expiryViolations('spec.expires_at', request.spec?.expiresAt)];
    violations.push(...nameViolations('metadata.name', request.metadata?.name ?? ''));
    if (violations.length > 0) throw invalid(violations);
    // Check access before spending ~100 ms of CPU on a key pair.
    await this.accountOf(principal, accountId, request.metadata?.parentId ?? '');
    const pair = await generateKeyPairAsync('rsa', { modulusLength: 2048 });
    const parsed = parsePublicKeyPem(pair.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    const privateKey = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const { key } = await this.insert(principal, request.metadata, {
      accountId,
      parsed,
      description: request.spec?.description ?? '',
      expiresAt: request.spec?.expiresAt,
      operation: { description: 'Generate public key', request: packOperationRequest(GenerateAuthPublicKeyRequestSchema, request), ...call },
      answer: (stored) => toBinary(GenerateAuthPublicKeyResponseSchema, create(GenerateAuthPublicKeyResponseSchema, { key: stored, privateKey })),
    });
    return { key, privateKey };
  }

  activate(principal: Principal, id: string, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    return this.setActive(
      principal,
      id,
      true,
      packOperationRequest(ActivateAuthPublicKeyRequestSchema, create(ActivateAuthPublicKeyRequestSchema, { id })),
      call,
    );
  }

  deactivate(principal: Principal, id: string, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    return this.setActive(
      principal,
      id,
      false,
      packOperationRequest(DeactivateAuthPublicKeyRequestSchema, create(DeactivateAuthPublicKeyRequestSchema, { id })),
      call,
    );
  }

  async delete(principal: Principal, id: string, call: OperationCall = { headers: {} }): Promise<OperationRow> {
    requireFields({ id });
    return this.knex.transaction(async (trx) => {
      const row = await this.keys.lock(id, trx);
      if (!row) throw keyNotFound(id);
      authorize(principal, 'mutate', row.parent_id);
      await this.keys.delete(id, trx);
      const request = packOperationRequest(DeleteAuthPublicKeyRequestSchema, create(DeleteAuthPublicKeyRequestSchema, { id }));
      return this.finished(trx, principal, row, { description: 'Delete public key', request, ...call });
    });
  }

  /** The key as the token exchange checks it (no access rules: the JWT's signature is the proof). */
  async findForExchange(id: string): Promise<JwtPublicKey | undefined> {
    const row = await this.keys.findById(id);
    return row ? { serviceAccountId: row.service_account_id, publicKey: row.public_key_pem, active: row.active, expiresAt: row.expires_at } : undefined;
  }

  private async setActive(principal: Principal, id: string, active: boolean, request: Uint8Array, call: OperationCall): Promise<OperationRow> {
    requireFields({ id });
    return this.knex.transaction(async (trx) => {
      const row = await this.keys.lock(id, trx);
      if (!row) throw keyNotFound(id);
      authorize(principal, 'mutate', row.parent_id);
      const key = decode(row);
      key.status ??= create(AuthPublicKeyStatusSchema);
      key.status.active = active;
      if (key.metadata) bumpVersion(key.metadata);
      await this.keys.update(
        {
          id,
          active,
          resource_version: Number(key.metadata?.resourceVersion ?? 0n),
          data: toBinary(AuthPublicKeySchema, key),
          doc: resourceDocument(AuthPublicKeySchema, key),
        },
        trx,
      );
      return this.finished(trx, principal, row, { description: active ? 'Activate public key' : 'Deactivate public key', request, ...call });
    });
  }

  /** The account a new key belongs to, after checking the caller may add keys to its project. */
  private async accountOf(principal: Principal, accountId: string, parentId: string, trx?: Knex) {
    const account = await this.accounts.find(accountId, trx);
    if (!account) throw new AppError('not_found', `service account ${accountId} not found`, { resourceId: accountId });
    const projectId = account.metadata?.parentId ?? '';
    if (parentId !== '' && parentId !== projectId) {
      throw invalid([{ field: 'metadata.parent_id', message: `must be empty or the service account's project ${projectId}` }]);
    }
    authorize(principal, 'mutate', projectId);
    return account;
  }

  private async insert(
    principal: Principal,
    metadata: ResourceMetadata | undefined,
    input: {
      accountId: string;
      parsed: ParsedPublicKey;
      description: string;
      expiresAt: Timestamp | undefined;
      operation: OperationInput;
      /** The answer a retry with the request's idempotency key gets (Generate's: it holds the private key). */
      answer?: (key: AuthPublicKey) => Uint8Array;
    },
  ): Promise<{ key: AuthPublicKey; row: OperationRow }> {
    return this.knex.transaction(async (trx) => {
      const account = await this.accountOf(principal, input.accountId, metadata?.parentId ?? '', trx);
      const projectId = account.metadata?.parentId ?? '';
      const id = `publickey-${randomBytes(10).toString('hex')}`;
      const now = timestampFromDate(new Date());
      const key = create(AuthPublicKeySchema, {
        metadata: { id, parentId: projectId, name: metadata?.name ?? '', labels: metadata?.labels ?? {}, resourceVersion: 1n, createdAt: now, updatedAt: now },
        spec: { serviceAccountId: input.accountId, data: input.parsed.pem, description: input.description, expiresAt: input.expiresAt },
        status: { active: true, fingerprint: input.parsed.fingerprint, algorithm: input.parsed.algorithm },
      });
      await this.keys
        .insert(
          {
            id,
            parent_id: projectId,
            service_account_id: input.accountId,
            fingerprint: input.parsed.fingerprint,
            active: true,
            expires_at: input.expiresAt ? timestampDate(input.expiresAt) : null,
            public_key_pem: input.parsed.pem,
            resource_version: 1,
            data: toBinary(AuthPublicKeySchema, key),
            doc: resourceDocument(AuthPublicKeySchema, key),
          },
          trx,
        )
        .catch(
          onUniqueViolation(
            () =>
              new AppError('already_exists', `service account ${input.accountId} already has the key ${input.parsed.fingerprint}`, {
                resourceId: input.accountId,
              }),
          ),
        );
      // Kept with the request's idempotency key (sealed under it), so a retry with the key gets it again.
      if (input.answer && input.operation.idempotency) input.operation.idempotency.answer = input.answer(key);
      const row = await this.finished(trx, principal, { id, parent_id: projectId }, input.operation);
      return { key, row };
    });
  }

  /** Key changes are done in the transaction: their operation is recorded complete. */
  private finished(trx: Knex, principal: Principal, key: Pick<PublicKeyRow, 'id' | 'parent_id'>, operation: OperationInput): Promise<OperationRow> {
    return beginOperation(this.operations, trx, IAM_SERVICE, principal, { resourceId: key.id, parentId: key.parent_id }, operation);
  }
}

function decode(row: PublicKeyRow): AuthPublicKey {
  return fromBinary(AuthPublicKeySchema, row.data);
}

function keyNotFound(id: string): AppError {
  return new AppError('not_found', `public key ${id} not found`, { resourceId: id });
}

function expiryViolations(field: string, expiresAt: Timestamp | undefined): Violation[] {
  return expiresAt && timestampDate(expiresAt).getTime() <= Date.now() ? [{ field, message: 'must be in the future' }] : [];
}
