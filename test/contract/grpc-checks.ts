/**
 * What every gRPC answer of the server must look like, checked generically over protobuf-es
 * reflection: responses (OUTPUT_ONLY messages present, ids well-formed, Operations shaped per contracts/proto/cloud/common/v1,
 * no secret in `Operation.request`) and errors (a google.rpc.Status whose details hold a
 * cloud.common.v1.ServiceError of the kind the code promises).
 */
import * as grpc from '@grpc/grpc-js';
import { getOption, hasOption, isMessage, type DescField, type DescMessage, type Message, type Registry } from '@bufbuild/protobuf';
import { reflect, type ReflectMessage } from '@bufbuild/protobuf/reflect';
import { anyUnpack, timestampDate, TimestampSchema, type Any } from '@bufbuild/protobuf/wkt';
import { credentials, field_behavior, FieldBehavior, sensitive } from '../../generated/proto/cloud/annotations_pb.js';
import { OperationSchema, type Operation } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import { ServiceError_RetryType as RetryType, ServiceErrorSchema } from '../../generated/proto/cloud/common/v1/error_pb.js';
import type { GrpcCallError } from '../support/grpc.js';

/** `<kind>-<opaque>`: a lowercase kind, a dash, then letters, digits, dashes or underscores. */
export const ID_PATTERN = /^[a-z][a-z0-9]*-[A-Za-z0-9_-]+$/;

export type StatusName = keyof typeof grpc.status;

/** The ServiceError detail each gRPC code promises (docs/cloud-api.md, "Read error details"); undefined = no detail kind. */
export const DETAIL_OF_CODE: Partial<Record<StatusName, Array<string | undefined>>> = {
  INVALID_ARGUMENT: ['badRequest'],
  NOT_FOUND: ['resourceNotFound'],
  ALREADY_EXISTS: ['resourceAlreadyExists'],
  PERMISSION_DENIED: ['permissionDenied'],
  FAILED_PRECONDITION: ['badResourceState'],
  ABORTED: ['resourceConflict', 'operationConflict', 'operationAborted'],
  RESOURCE_EXHAUSTED: ['tooManyRequests', 'quotaFailure'],
  INTERNAL: ['internalError'],
  UNAUTHENTICATED: [undefined],
};

function behaviours(field: DescField): FieldBehavior[] {
  return hasOption(field, field_behavior) ? getOption(field, field_behavior) : [];
}

function isSecret(field: DescField): boolean {
  return (hasOption(field, sensitive) && getOption(field, sensitive)) || (hasOption(field, credentials) && getOption(field, credentials));
}

/** Problems of a response message, at any depth (`path` names where). */
export function responseProblems(desc: DescMessage, message: Message, registry: Registry): string[] {
  const problems: string[] = [];
  walk(reflect(desc, message), desc.typeName, problems, registry);
  return problems;
}

function walk(r: ReflectMessage, path: string, problems: string[], registry: Registry): void {
  if (r.desc.typeName === OperationSchema.typeName) operationProblems(r.message as Operation, path, problems, registry);
  if (r.desc.typeName === TimestampSchema.typeName) {
    const seconds = Number(r.get(r.desc.fields[0] as DescField) ?? 0);
    if (!(seconds > 0)) problems.push(`${path}: a timestamp at or before the epoch (${seconds})`);
  }
  for (const field of r.fields) {
    const at = `${path}.${field.name}`;
    const set = r.isSet(field);
    const kinds = behaviours(field);
    if (kinds.includes(FieldBehavior.OUTPUT_ONLY) && field.fieldKind === 'message' && !set) problems.push(`${at}: OUTPUT_ONLY message missing`);
    if (kinds.includes(FieldBehavior.IDENTIFIER) && field.fieldKind === 'scalar') {
      const value = r.get(field);
      if (typeof value !== 'string' || !ID_PATTERN.test(value)) problems.push(`${at}: identifier ${JSON.stringify(value)} is not <kind>-<opaque>`);
    }
    if (!set) continue;
    // Any payloads are checked where their meaning is known (Operation.request); do not descend.
    if (field.fieldKind === 'message' && field.message.typeName !== 'google.protobuf.Any') {
      walk(r.get(field) as ReflectMessage, at, problems, registry);
    } else if (field.fieldKind === 'list' && field.listKind === 'message') {
      let index = 0;
      for (const item of r.get(field)) walk(item as ReflectMessage, `${at}[${index++}]`, problems, registry);
    } else if (field.fieldKind === 'map' && field.mapKind === 'message') {
      for (const [key, item] of r.get(field)) walk(item as ReflectMessage, `${at}[${String(key)}]`, problems, registry);
    }
  }
}

/** contracts/proto/cloud/common/v1/operation.proto: id, description, created_at, created_by, request, resource_id always; finished_at iff status. */
function operationProblems(operation: Operation, path: string, problems: string[], registry: Registry): void {
  if (!/^operation-[A-Za-z0-9_-]+$/.test(operation.id)) problems.push(`${path}.id: ${JSON.stringify(operation.id)} is not operation-<opaque>`);
  if (operation.description === '') problems.push(`${path}.description: empty`);
  if (!operation.createdAt) problems.push(`${path}.created_at: missing`);
  if (operation.createdBy === '') problems.push(`${path}.created_by: empty`);
  if (!ID_PATTERN.test(operation.resourceId)) problems.push(`${path}.resource_id: ${JSON.stringify(operation.resourceId)} is not <kind>-<opaque>`);
  if (!operation.status !== !operation.finishedAt)
    problems.push(`${path}: finished_at and status must be set together (status ${operation.status ? 'set' : 'unset'})`);
  if (operation.createdAt && operation.finishedAt && timestampDate(operation.finishedAt) < timestampDate(operation.createdAt))
    problems.push(`${path}.finished_at: before created_at`);
  if (operation.status && operation.status.code !== 0) {
    const details = operation.status.details.map((any) => anyUnpack(any, ServiceErrorSchema)).filter((value) => value !== undefined);
    if (details.length === 0) problems.push(`${path}.status: a failed operation without a ServiceError detail`);
  }
  for (const [name, header] of Object.entries(operation.requestHeaders)) {
    if (name !== name.toLowerCase()) problems.push(`${path}.request_headers: ${name} is not lowercase`);
    if (header.values.length === 0) problems.push(`${path}.request_headers[${name}]: no values`);
  }
  if (!operation.request) {
    problems.push(`${path}.request: missing`);
    return;
  }
  const request = unpack(operation.request, registry);
  if (!request) {
    problems.push(`${path}.request: ${operation.request.typeUrl} is not a message the server describes`);
    return;
  }
  for (const secret of secretsSet(request.desc, request.message, 'request'))
    problems.push(`${path}.${secret}: a sensitive or credentials value is stored in the operation`);
}

function unpack(any: Any, registry: Registry): { desc: DescMessage; message: Message } | undefined {
  const desc = registry.getMessage(any.typeUrl.slice(any.typeUrl.lastIndexOf('/') + 1));
  const message = desc && anyUnpack(any, registry);
  return desc && message && isMessage(message) ? { desc, message } : undefined;
}

function secretsSet(desc: DescMessage, message: Message, path: string): string[] {
  const found: string[] = [];
  const visit = (r: ReflectMessage, at: string) => {
    for (const field of r.fields) {
      if (!r.isSet(field)) continue;
      if (isSecret(field)) found.push(`${at}.${field.name}`);
      if (field.fieldKind === 'message') visit(r.get(field) as ReflectMessage, `${at}.${field.name}`);
      else if (field.fieldKind === 'list' && field.listKind === 'message')
        for (const item of r.get(field)) visit(item as ReflectMessage, `${at}.${field.name}[]`);
      else if (field.fieldKind === 'map' && field.mapKind === 'message')
        for (const [key, item] of r.get(field)) visit(item as ReflectMessage, `${at}.${field.name}[${String(key)}]`);
    }
  };
  visit(reflect(desc, message), path);
  return found;
}

/** Problems of a failed call: the code, x-request-id, and (unless exempt) the ServiceError detail. */
export function errorProblems(error: GrpcCallError, want: StatusName, options: { serviceError: boolean; apiServiceName: string }): string[] {
  const problems: string[] = [];
  const got = grpc.status[error.code] as StatusName | undefined;
  if (got !== want) problems.push(`wanted ${want}, got ${got ?? error.code}: ${error.details}`);
  const requestId = error.metadata.get('x-request-id')[0] ?? error.headers.get('x-request-id')[0];
  if (!requestId) problems.push('no x-request-id in the error trailers or headers');
  if (!options.serviceError) return problems;
  if (!error.status) {
    problems.push('no grpc-status-details-bin (google.rpc.Status)');
    return problems;
  }
  if (error.status.code !== error.code) problems.push(`google.rpc.Status.code ${error.status.code} differs from the gRPC code ${error.code}`);
  const serviceError = error.serviceError;
  if (!serviceError) {
    problems.push(
      `google.rpc.Status.details has no cloud.common.v1.ServiceError (${error.status.details.map((any) => any.typeUrl).join(', ') || 'no details'})`,
    );
    return problems;
  }
  if (serviceError.code === '') problems.push('ServiceError.code is empty');
  if (serviceError.retryType === RetryType.UNSPECIFIED) problems.push('ServiceError.retry_type is UNSPECIFIED');
  if (options.apiServiceName !== '*' && serviceError.service !== options.apiServiceName) {
    problems.push(
      `ServiceError.service is ${JSON.stringify(serviceError.service)}, the service's api_service_name is ${JSON.stringify(options.apiServiceName)}`,
    );
  }
  if (options.apiServiceName === '*' && serviceError.service === '') problems.push('ServiceError.service is empty');
  const allowed = DETAIL_OF_CODE[want];
  if (allowed && !allowed.includes(serviceError.details.case))
    problems.push(`ServiceError detail ${serviceError.details.case ?? 'unset'} for ${want} (wanted ${allowed.map(String).join(' or ')})`);
  return problems;
}
