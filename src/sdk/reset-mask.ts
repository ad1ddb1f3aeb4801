/**
 * The reset mask of a full update, computed as the Go SDK computes it (nebius/gosdk
 * proto/fieldmask/protobuf/from_message.go ResetMaskFromMessage, printed like fieldmask/mask
 * Mask.Marshal): every field that is unset or holds its default is named, so the server resets
 * it, and the message replaces the resource whole. Nested messages are walked; an empty list or
 * map is named; the elements of a list or map of messages are walked under `*`.
 */
import type { DescMessage, MessageShape } from '@bufbuild/protobuf';
import { isFieldSet } from '@bufbuild/protobuf';

interface MaskNode {
  children: Map<string, MaskNode>;
  any: MaskNode | undefined;
}

const node = (): MaskNode => ({ children: new Map(), any: undefined });
const RECURSION_LIMIT = 1000;

/** `X-ResetMask` for sending `message` as a full replacement. */
export function resetMaskFromMessage<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): string {
  const root = node();
  collect(root, schema, message as Record<string, unknown>, 0);
  return print(root).join(',');
}

function childOf(mask: MaskNode, name: string): MaskNode {
  let child = mask.children.get(name);
  if (!child) {
    child = node();
    mask.children.set(name, child);
  }
  return child;
}

function collect(mask: MaskNode, schema: DescMessage, message: Record<string, unknown>, depth: number): void {
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
        child.any ??= node();
        for (const element of list) collect(child.any, field.message, element as Record<string, unknown>, depth + 1);
      }
      continue;
    }
    if (field.fieldKind === 'map') {
      const entries = Object.values(value as Record<string, unknown>);
      if (entries.length === 0) childOf(mask, name);
      else if (field.mapKind === 'message') {
        const child = childOf(mask, name);
        child.any ??= node();
        for (const entry of entries) collect(child.any, field.message, entry as Record<string, unknown>, depth + 1);
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

/** Canonical print: elements sorted bytewise, one child as `a.b`, several as `a.(b,c)`, `*` for every element. */
function print(mask: MaskNode): string[] {
  const elements: string[] = [];
  const entries: Array<[string, MaskNode]> = [...mask.children];
  if (mask.any) entries.push(['*', mask.any]);
  for (const [key, child] of entries) {
    const inner = print(child);
    if (inner.length === 0) elements.push(key);
    else if (inner.length === 1) elements.push(`${key}.${inner[0]}`);
    else elements.push(`${key}.(${inner.join(',')})`);
  }
  return elements.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
