import { clone, create, fromBinary, getOption, hasOption, toBinary, type DescField, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { anyPack, AnySchema, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { reflect, type ReflectMessage } from '@bufbuild/protobuf/reflect';
import { credentials, sensitive } from '../../../generated/proto/cloud/annotations_pb.js';
import { OperationProgressSchema, OperationSchema, type Operation } from '../../../generated/proto/cloud/common/v1/operation_pb.js';
import { StatusSchema, type Status } from '../../../generated/proto/google/rpc/status_pb.js';
import type { OperationRow } from '../../store/repositories/operation-repository.js';

const secretFields = new WeakMap<DescField, boolean>();

/** True for fields annotated `sensitive` or `credentials`; cached per descriptor. */
function isSecret(field: DescField): boolean {
  let secret = secretFields.get(field);
  if (secret === undefined) {
    secret = (hasOption(field, sensitive) && getOption(field, sensitive)) || (hasOption(field, credentials) && getOption(field, credentials));
    secretFields.set(field, secret);
  }
  return secret;
}

function redactInPlace(message: ReflectMessage): void {
  for (const field of message.fields) {
    if (!message.isSet(field)) continue;
    if (isSecret(field)) {
      message.clear(field);
      continue;
    }
    if (field.fieldKind === 'message') redactInPlace(message.get(field));
    else if (field.fieldKind === 'list' && field.listKind === 'message') {
      for (const item of message.get(field)) redactInPlace(item as ReflectMessage);
    } else if (field.fieldKind === 'map' && field.mapKind === 'message') {
      for (const [, value] of message.get(field)) redactInPlace(value as ReflectMessage);
    }
  }
}

/**
 * A copy of `message` with every `sensitive` and `credentials` field cleared, at any depth, so
 * secrets never reach `Operation.request`, logs or the database (docs/cloud-api.md). Generic over any message.
 */
export function redactSecrets<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): MessageShape<Desc> {
  const copy = clone(schema, message);
  redactInPlace(reflect(schema, copy));
  return copy;
}

/** The bytes stored as `Operation.request`: the request, secrets cleared, packed in an Any. */
export function packOperationRequest<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): Uint8Array {
  return toBinary(AnySchema, anyPack(schema, redactSecrets(schema, message)));
}

/**
 * The `progress_data` of running work: an OperationProgress packed in an Any, its phase the one of
 * `phases` that `percent` falls in ("done" once finished).
 */
export function progressData(percent: number, phases: readonly string[] = [], finished = false): Uint8Array {
  const index = Math.min(phases.length - 1, Math.floor((percent / 100) * phases.length));
  const phase = finished ? 'done' : (phases[index] ?? '');
  return toBinary(AnySchema, anyPack(OperationProgressSchema, create(OperationProgressSchema, { percentDone: percent, phase })));
}

/** The google.rpc.Status of a successful operation. */
export function okStatus(): Uint8Array {
  return toBinary(StatusSchema, create(StatusSchema, { code: 0, message: '' }));
}

/** The google.rpc.Status of a cancelled operation, when the service gives no richer one. */
export function cancelledStatus(): Uint8Array {
  return toBinary(StatusSchema, create(StatusSchema, { code: 1, message: 'the operation was cancelled' }));
}

/** Encodes a failure status (its details carry ServiceError messages). */
export function encodeStatus(status: Status): Uint8Array {
  return toBinary(StatusSchema, status);
}

/** The wire message of a stored operation. */
export function toOperationMessage(row: OperationRow): Operation {
  return create(OperationSchema, {
    id: row.id,
    description: row.description,
    createdAt: timestampFromDate(row.created_at),
    createdBy: row.created_by,
    finishedAt: row.finished_at ? timestampFromDate(row.finished_at) : undefined,
    request: row.request.length > 0 ? fromBinary(AnySchema, row.request) : undefined,
    requestHeaders: Object.fromEntries(Object.entries(row.request_headers).map(([name, values]) => [name, { values }])),
    resourceId: row.resource_id,
    status: row.status ? fromBinary(StatusSchema, row.status) : undefined,
    progressData: row.progress ? fromBinary(AnySchema, row.progress) : undefined,
  });
}
