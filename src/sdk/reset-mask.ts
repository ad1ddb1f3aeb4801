/**
 * The reset mask of a full update, computed as the Go SDK computes it (nebius/gosdk
 * proto/fieldmask/protobuf/from_message.go ResetMaskFromMessage): every field that is unset or
 * holds its default is named, so the server resets it, and the message replaces the resource whole.
 * Nested messages are walked; an empty list or map is named; the elements of a list or map of
 * messages are walked under `*`. The tree and its canonical print are the server's own
 * (src/engines/reset-mask), so what the SDK sends is what the server stores and compares.
 */
import type { DescMessage, MessageShape } from '@bufbuild/protobuf';
import { isFieldSet } from '@bufbuild/protobuf';
import { emptyResetMask, type MutableResetMask } from '../engines/reset-mask/reset-mask.js';
import { printResetMask } from '../engines/reset-mask/print-reset-mask.js';

const RECURSION_LIMIT = 1000;

/** `X-ResetMask` for sending `message` as a full replacement. */
export function resetMaskFromMessage<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): string {
  const root = emptyResetMask();
  collect(root, schema, message as Record<string, unknown>, 0);
  return printResetMask(root);
}

function childOf(mask: MutableResetMask, name: string): MutableResetMask {
  let child = mask.children.get(name);
  if (!child) {
    child = emptyResetMask();
    mask.children.set(name, child);
  }
  return child;
}

function collect(mask: MutableResetMask, schema: DescMessage, message: Record<string, unknown>, depth: number): void {
  if (depth >= RECURSION_LIMIT) throw new Error('reset mask: recursion too deep');
  for (const field of schema.fields) {
    const name = field.name;
    // A member of a oneof is read through the oneof's {case, value}.
    const value = field.oneof ? oneofValue(message, field.oneof.localName, field.localName) : message[field.localName];
    const isSet = field.oneof ? value !== undefined : isFieldSet(message as MessageShape<DescMessage>, field);
    if (!isSet) {
      childOf(mask, name);
      continue;
    }
    if (field.fieldKind === 'list') {
      const list = value as unknown[];
      if (list.length === 0) childOf(mask, name);
      else if (field.listKind === 'message') {
        const child = childOf(mask, name);
        child.wildcard ??= emptyResetMask();
        for (const element of list) collect(child.wildcard, field.message, element as Record<string, unknown>, depth + 1);
      }
      continue;
    }
    if (field.fieldKind === 'map') {
      const entries = Object.values(value as Record<string, unknown>);
      if (entries.length === 0) childOf(mask, name);
      else if (field.mapKind === 'message') {
        const child = childOf(mask, name);
        child.wildcard ??= emptyResetMask();
        for (const entry of entries) collect(child.wildcard, field.message, entry as Record<string, unknown>, depth + 1);
      }
      continue;
    }
    if (field.fieldKind === 'message') {
      collect(childOf(mask, name), field.message, value as Record<string, unknown>, depth + 1);
      continue;
    }
    // A set scalar or enum: proto3 `optional` and oneof members can be set to their default.
    if (isDefault(value)) childOf(mask, name);
  }
}

function oneofValue(message: Record<string, unknown>, oneof: string, member: string): unknown {
  const group = message[oneof] as { case?: string; value?: unknown } | undefined;
  return group?.case === member ? group.value : undefined;
}

/** Whether a set scalar or enum holds its type's default (zero, false, empty). */
function isDefault(value: unknown): boolean {
  if (value instanceof Uint8Array) return value.length === 0;
  return value === 0 || value === 0n || value === false || value === '';
}
