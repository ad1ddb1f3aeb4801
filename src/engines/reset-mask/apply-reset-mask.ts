import { clone, create, equals, getOption, hasOption, type DescField, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { reflect, type ReflectMessage } from '@bufbuild/protobuf/reflect';
import { FieldBehavior, field_behavior } from '../../../generated/proto/cloud/annotations_pb.js';
import { emptyResetMask, subMask, type ResetMask } from './reset-mask.js';

/** An Update tried to change an IMMUTABLE (or IDENTIFIER) field; callers map it to INVALID_ARGUMENT. */
export class ImmutableFieldError extends Error {
  override readonly name = 'ImmutableFieldError';

  constructor(
    /** The dotted path of the field, as the mask spells it (e.g. `spec.image_family`). */
    readonly fieldPath: string,
  ) {
    super(`field ${fieldPath} is immutable and cannot be changed`);
  }
}

interface Behavior {
  readonly outputOnly: boolean;
  readonly immutable: boolean;
}

const behaviors = new WeakMap<DescField, Behavior>();

/** Reads `cloud.field_behavior` once per field descriptor; the option never changes at runtime. */
function behaviorOf(field: DescField): Behavior {
  let behavior = behaviors.get(field);
  if (behavior === undefined) {
    const values = hasOption(field, field_behavior) ? getOption(field, field_behavior) : [];
    behavior = {
      outputOnly: values.includes(FieldBehavior.OUTPUT_ONLY),
      immutable: values.includes(FieldBehavior.IMMUTABLE) || values.includes(FieldBehavior.IDENTIFIER),
    };
    behaviors.set(field, behavior);
  }
  return behavior;
}

/** Compares one field of two messages of the same type, through single-field copies. */
function fieldEquals(desc: DescMessage, field: DescField, a: ReflectMessage, b: ReflectMessage): boolean {
  const only = (from: ReflectMessage): ReflectMessage => {
    const target = reflect(desc, create(desc));
    if (from.isSet(field)) target.set(field, from.get(field));
    return target;
  };
  return equals(desc, only(a).message, only(b).message);
}

/**
 * Walks the stored and the patched message side by side and returns the path of the first
 * IMMUTABLE/IDENTIFIER field whose value differs. A separate pass (rather than checks inside the
 * patch) also catches immutable fields cleared with their parent (`spec` named while absent).
 * New list elements and map values are creations, not changes, so only common ones are walked.
 */
function changedImmutablePath(desc: DescMessage, before: ReflectMessage, after: ReflectMessage, path: string): string | undefined {
  for (const field of desc.fields) {
    const behavior = behaviorOf(field);
    if (behavior.outputOnly) continue;
    const fieldPath = path === '' ? field.name : `${path}.${field.name}`;
    if (behavior.immutable) {
      if (!fieldEquals(desc, field, before, after)) return fieldPath;
      continue;
    }
    switch (field.fieldKind) {
      case 'message': {
        if (!before.isSet(field) && !after.isSet(field)) break;
        const empty = (): ReflectMessage => reflect(field.message, create(field.message));
        const b = before.isSet(field) ? before.get(field) : empty();
        const a = after.isSet(field) ? after.get(field) : empty();
        const found = changedImmutablePath(field.message, b, a, fieldPath);
        if (found !== undefined) return found;
        break;
      }
      case 'list': {
        if (field.listKind !== 'message') break;
        const b = before.get(field);
        const a = after.get(field);
        for (let i = 0; i < Math.min(a.size, b.size); i++) {
          const found = changedImmutablePath(field.message, b.get(i) as ReflectMessage, a.get(i) as ReflectMessage, `${fieldPath}.${i}`);
          if (found !== undefined) return found;
        }
        break;
      }
      case 'map': {
        if (field.mapKind !== 'message') break;
        const b = before.get(field);
        const a = after.get(field);
        for (const [key, value] of a) {
          const old = b.get(key);
          if (old === undefined) continue;
          const found = changedImmutablePath(field.message, old as ReflectMessage, value as ReflectMessage, `${fieldPath}.${String(key)}`);
          if (found !== undefined) return found;
        }
        break;
      }
      default:
        break;
    }
  }
  return undefined;
}

/** True when some message reachable from `desc` has an IMMUTABLE/IDENTIFIER field, so the check pass can be skipped. */
function hasImmutableFields(desc: DescMessage, seen: Set<DescMessage> = new Set()): boolean {
  if (seen.has(desc)) return false;
  seen.add(desc);
  return desc.fields.some((field) => {
    const behavior = behaviorOf(field);
    if (behavior.outputOnly) return false;
    if (behavior.immutable) return true;
    return field.message !== undefined && hasImmutableFields(field.message, seen);
  });
}

const immutableBySchema = new WeakMap<DescMessage, boolean>();

/**
 * Patches `data` in place from `patch` (both of `desc`'s type), field by field, with the rules of
 * the reference implementation. New list elements and map values start empty and are patched
 * with no mask, so they take the request's values except OUTPUT_ONLY ones.
 */
function patchMessage(desc: DescMessage, data: ReflectMessage, patch: ReflectMessage, mask: ResetMask | undefined): void {
  for (const field of desc.fields) {
    const behavior = behaviorOf(field);
    if (behavior.outputOnly) continue;
    let fieldMask = subMask(mask, field.name);
    // Naming the oneof itself (`placement`) names each of its members without inner fields.
    if (fieldMask === undefined && field.oneof !== undefined && subMask(mask, field.oneof.name) !== undefined) {
      fieldMask = emptyResetMask();
    }
    if (!patch.isSet(field)) {
      if (fieldMask !== undefined) data.clear(field);
      continue;
    }
    switch (field.fieldKind) {
      case 'scalar':
      case 'enum':
        data.set(field, patch.get(field));
        break;
      case 'message': {
        const target = data.isSet(field) ? data.get(field) : reflect(field.message, create(field.message));
        patchMessage(field.message, target, patch.get(field), fieldMask);
        data.set(field, target);
        break;
      }
      case 'list':
        patchList(field, data, patch, fieldMask);
        break;
      case 'map':
        patchMap(field, data, patch, fieldMask);
        break;
    }
  }
}

/** Lists of messages are patched over the common prefix; others are replaced (as the Go SDK's PatchWithResetMask does). */
function patchList(field: DescField & { fieldKind: 'list' }, data: ReflectMessage, patch: ReflectMessage, mask: ResetMask | undefined): void {
  const incoming = patch.get(field);
  const stored = data.get(field);
  if (field.listKind !== 'message') {
    stored.clear();
    for (const item of incoming) stored.add(item);
    return;
  }
  const elementDesc = field.message;
  const next = reflect(data.desc, create(data.desc)).get(field);
  for (let i = 0; i < incoming.size; i++) {
    const from = incoming.get(i) as ReflectMessage;
    const existing = i < stored.size ? (stored.get(i) as ReflectMessage | undefined) : undefined;
    const target = existing ?? reflect(elementDesc, create(elementDesc));
    const elementMask = existing === undefined ? undefined : subMask(mask, String(i));
    patchMessage(elementDesc, target, from, elementMask);
    next.add(target);
  }
  data.set(field, next);
}

/** Maps of messages are patched per key, absent keys removed, new keys added (as the Go SDK's PatchWithResetMask does). */
function patchMap(field: DescField & { fieldKind: 'map' }, data: ReflectMessage, patch: ReflectMessage, mask: ResetMask | undefined): void {
  const incoming = patch.get(field);
  const stored = data.get(field);
  const next = reflect(data.desc, create(data.desc)).get(field);
  for (const [key, value] of incoming) {
    if (field.mapKind !== 'message') {
      next.set(key, value);
      continue;
    }
    const valueDesc = field.message;
    const existing = stored.get(key) as ReflectMessage | undefined;
    const target = existing ?? reflect(valueDesc, create(valueDesc));
    const valueMask = existing === undefined ? undefined : subMask(mask, String(key));
    patchMessage(valueDesc, target, value as ReflectMessage, valueMask);
    next.set(key, target);
  }
  data.set(field, next);
}

/**
 * Computes the resource an Update stores: the stored message patched by the request under the
 * reset mask (docs/cloud-api.md, the Go SDK's PatchWithResetMask), generic over any message type. Neither
 * input is modified; unknown fields of the stored message are kept; OUTPUT_ONLY fields keep their
 * stored value. Throws ImmutableFieldError when an IMMUTABLE or IDENTIFIER field would change.
 */
export function applyResetMask<Desc extends DescMessage>(
  schema: Desc,
  stored: MessageShape<Desc>,
  request: MessageShape<Desc>,
  mask: ResetMask | undefined,
): MessageShape<Desc> {
  const result = clone(schema, stored);
  const patched = reflect(schema, result);
  patchMessage(schema, patched, reflect(schema, clone(schema, request)), mask);
  let checkImmutable = immutableBySchema.get(schema);
  if (checkImmutable === undefined) {
    checkImmutable = hasImmutableFields(schema);
    immutableBySchema.set(schema, checkImmutable);
  }
  if (checkImmutable) {
    const changed = changedImmutablePath(schema, reflect(schema, stored), patched, '');
    if (changed !== undefined) throw new ImmutableFieldError(changed);
  }
  return result;
}
