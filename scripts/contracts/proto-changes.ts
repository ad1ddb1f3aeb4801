/**
 * Every change between two protobuf descriptor sets (buf images: `buf build -o x.binpb`), on the one
 * severity scale. `buf breaking` lists only what breaks; this walks both sets (the module's own files,
 * not their imports) and lists services, RPCs, messages, fields, enums and values added, removed or
 * changed, and comments rewritten, each named as generated code names it
 * (`cloud.compute.v1.InstanceService.Create`, `cloud.compute.v1.Instance.name`).
 *
 * Decisions:
 * - a field renamed (same number) is breaking: the binary wire is unchanged, but the JSON key
 *   (Connect JSON, gRPC-Web JSON, the Operation request copies) and every generated accessor change;
 * - a value added to an enum is dangerous: proto3 enums are open and old clients see a number they do
 *   not name;
 * - a field's `(cloud.field_behavior)` changing is dangerous (what the server does with the field
 *   changes, not its shape); `deprecated` is an additive notice.
 */
import { fromBinary } from '@bufbuild/protobuf';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorSetSchema,
  type DescriptorProto,
  type EnumDescriptorProto,
  type FieldDescriptorProto,
  type FileDescriptorProto,
  type SourceCodeInfo,
} from '@bufbuild/protobuf/wkt';
import type { Severity } from './changes.js';

/** One change, with the proto file it is in (as the module names it: `cloud/compute/v1/instance.proto`). */
export interface ProtoChange {
  severity: Severity;
  file: string;
  subject: string;
  change: string;
  action: string;
}

/** buf's ImageFileExtension on each file of an image: field 1 says the file is an import. */
const BUF_IMAGE_EXTENSION = 8042;
/** `extend google.protobuf.FieldOptions { repeated FieldBehavior field_behavior = 50002; }` in cloud/annotations.proto. */
const FIELD_BEHAVIOR = 50002;
const FIELD_BEHAVIOR_NAMES = ['UNSPECIFIED', 'IMMUTABLE', 'IDENTIFIER', 'INPUT_ONLY', 'OUTPUT_ONLY', 'MEANINGFUL_EMPTY_VALUE', 'NON_EMPTY_DEFAULT'];

function isImport(file: FileDescriptorProto): boolean {
  for (const unknown of file.$unknown ?? []) {
    if (unknown.no !== BUF_IMAGE_EXTENSION) continue;
    // The unknown field's data is length-delimited: its length, then the ImageFileExtension message.
    const reader = new BinaryReader(new BinaryReader(unknown.data).bytes());
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      if (field === 1) return reader.bool();
      reader.skip(wireType);
    }
    return false;
  }
  return false;
}

/** The module's own files of a buf image or FileDescriptorSet, by name (imports left out). */
export function readDescriptorSet(bytes: Uint8Array): Map<string, FileDescriptorProto> {
  const set = fromBinary(FileDescriptorSetSchema, bytes);
  return new Map(set.file.filter((file) => !isImport(file)).map((file) => [file.name, file]));
}

/** The leading comment of the element at a source path, trimmed; empty without source info. */
function commentAt(info: SourceCodeInfo | undefined, path: number[]): string {
  const location = info?.location.find((candidate) => candidate.path.length === path.length && candidate.path.every((value, index) => value === path[index]));
  return (location?.leadingComments ?? '').trim();
}

function fieldBehaviors(field: FieldDescriptorProto): string[] {
  const values: number[] = [];
  for (const unknown of field.options?.$unknown ?? []) {
    if (unknown.no !== FIELD_BEHAVIOR) continue;
    const reader = new BinaryReader(unknown.data);
    // Packed (length-delimited) or one varint per entry: the data holds the value(s) without the tag.
    if (unknown.wireType === 2) {
      const end = reader.uint32() + reader.pos;
      while (reader.pos < end) values.push(reader.int32());
    } else values.push(reader.int32());
  }
  return values.map((value) => FIELD_BEHAVIOR_NAMES[value] ?? String(value)).sort();
}

interface MessageEntry {
  file: FileDescriptorProto;
  message: DescriptorProto;
  path: number[];
}

interface EnumEntry {
  file: FileDescriptorProto;
  enumType: EnumDescriptorProto;
  path: number[];
}

/** Every message and enum, nested ones included, by full name (`cloud.compute.v1.Instance.Spec`). */
function index(files: Map<string, FileDescriptorProto>): { messages: Map<string, MessageEntry>; enums: Map<string, EnumEntry> } {
  const messages = new Map<string, MessageEntry>();
  const enums = new Map<string, EnumEntry>();
  const visit = (file: FileDescriptorProto, prefix: string, message: DescriptorProto, path: number[]) => {
    const name = `${prefix}.${message.name}`;
    if (message.options?.mapEntry) return;
    messages.set(name, { file, message, path });
    message.nestedType.forEach((nested, at) => visit(file, name, nested, [...path, 3, at]));
    message.enumType.forEach((enumType, at) => enums.set(`${name}.${enumType.name}`, { file, enumType, path: [...path, 4, at] }));
  };
  for (const file of files.values()) {
    file.messageType.forEach((message, at) => visit(file, file.package, message, [4, at]));
    file.enumType.forEach((enumType, at) => enums.set(`${file.package}.${enumType.name}`, { file, enumType, path: [5, at] }));
  }
  return { messages, enums };
}

/** A field's type as a reader writes it: `string`, `repeated cloud.common.v1.Metadata`, `map<string, string>`, `optional int32`. */
function fieldType(field: FieldDescriptorProto, owner: DescriptorProto): string {
  if (field.type === FieldDescriptorProto_Type.MESSAGE) {
    const entry = owner.nestedType.find((nested) => nested.options?.mapEntry && field.typeName.endsWith(`.${nested.name}`));
    if (entry && field.label === FieldDescriptorProto_Label.REPEATED) {
      const [key, value] = [entry.field.find((candidate) => candidate.number === 1), entry.field.find((candidate) => candidate.number === 2)];
      if (key && value) return `map<${fieldType(key, entry)}, ${fieldType(value, entry)}>`;
    }
  }
  const base =
    field.type === FieldDescriptorProto_Type.MESSAGE || field.type === FieldDescriptorProto_Type.ENUM
      ? field.typeName.replace(/^\./, '')
      : FieldDescriptorProto_Type[field.type].toLowerCase();
  if (field.label === FieldDescriptorProto_Label.REPEATED) return `repeated ${base}`;
  return field.proto3Optional ? `optional ${base}` : base;
}

/** The oneof a field belongs to (a synthetic one for proto3 `optional` does not count). */
function oneofOf(field: FieldDescriptorProto, owner: DescriptorProto): string | undefined {
  if (field.oneofIndex === undefined || field.proto3Optional) return undefined;
  return owner.oneofDecl[field.oneofIndex]?.name;
}

/** Every change from `released` to `current` (each a map of file name → FileDescriptorProto). */
export function findProtoChanges(released: Map<string, FileDescriptorProto>, current: Map<string, FileDescriptorProto>): ProtoChange[] {
  const changes: ProtoChange[] = [];
  const add = (severity: Severity, file: FileDescriptorProto, subject: string, change: string, action: string) => changes.push({ severity, file: file.name, subject, change, action });
  const documented = (file: FileDescriptorProto, subject: string, before: string, after: string) => {
    if (before !== after) add('documentation', file, subject, `the comment ${before === '' ? 'was added' : after === '' ? 'was removed' : 'changed'}`, 'nothing to do');
  };
  const oldIndex = index(released);
  const newIndex = index(current);

  for (const [name, { file, message }] of oldIndex.messages) {
    if (!newIndex.messages.has(name)) add('breaking', file, `message ${name}`, 'the message was removed', `stop using ${message.name}`);
  }
  for (const [name, { file, message, path }] of newIndex.messages) {
    const old = oldIndex.messages.get(name);
    if (!old) {
      add('additive', file, `message ${name}`, 'the message was added', 'nothing to do');
      continue;
    }
    documented(file, `message ${name}`, commentAt(old.file.sourceCodeInfo, old.path), commentAt(file.sourceCodeInfo, path));
    const oldByNumber = new Map(old.message.field.map((field, at) => [field.number, { field, at }]));
    const newByNumber = new Map(message.field.map((field, at) => [field.number, { field, at }]));
    for (const { field } of oldByNumber.values()) {
      if (newByNumber.has(field.number)) continue;
      const moved = message.field.find((candidate) => candidate.name === field.name);
      if (moved) {
        add('breaking', file, `${name}.${field.name}`, `the field number changed from ${field.number} to ${moved.number}`, 'regenerate the client and redeploy it with the server: old binaries read the field as unknown');
      } else {
        const reserved = message.reservedRange.some((range) => field.number >= range.start && field.number < range.end);
        add('breaking', file, `${name}.${field.name}`, `the field ${field.name} (${field.number}) was removed${reserved ? ' (its number is reserved)' : ''}`, 'stop reading and sending it');
      }
    }
    for (const { field, at } of newByNumber.values()) {
      const subject = `${name}.${field.name}`;
      const before = oldByNumber.get(field.number);
      if (!before) {
        if (!old.message.field.some((candidate) => candidate.name === field.name)) {
          add('additive', file, subject, `the field ${field.name} (${field.number}, ${fieldType(field, message)}) was added`, 'nothing to do; regenerate the client to use it');
        }
        continue;
      }
      const was = before.field;
      if (was.name !== field.name) {
        add(
          'breaking',
          file,
          subject,
          `the field ${field.number} was renamed from ${was.name} to ${field.name} (JSON ${was.jsonName} → ${field.jsonName}; binary wire unchanged)`,
          `rename ${was.name} to ${field.name} in code, and ${was.jsonName} to ${field.jsonName} in JSON (Connect JSON, gRPC-Web JSON)`,
        );
      } else if (was.jsonName !== field.jsonName) {
        add('breaking', file, subject, `the JSON name changed from ${was.jsonName} to ${field.jsonName}`, `use ${field.jsonName} in JSON`);
      }
      const [typeBefore, typeAfter] = [fieldType(was, old.message), fieldType(field, message)];
      if (typeBefore !== typeAfter) add('breaking', file, subject, `the type changed from ${typeBefore} to ${typeAfter}`, `read and send it as ${typeAfter}`);
      const [oneofBefore, oneofAfter] = [oneofOf(was, old.message), oneofOf(field, message)];
      if (oneofBefore !== oneofAfter) {
        add('breaking', file, subject, oneofAfter ? `the field moved into the oneof ${oneofAfter}${oneofBefore ? ` (was ${oneofBefore})` : ''}` : `the field left the oneof ${oneofBefore ?? ''}`, 'set it through the new oneof accessor');
      }
      const [behaviorBefore, behaviorAfter] = [fieldBehaviors(was), fieldBehaviors(field)];
      if (behaviorBefore.join() !== behaviorAfter.join()) {
        add('dangerous', file, subject, `the field behavior changed from ${behaviorBefore.join(', ') || 'none'} to ${behaviorAfter.join(', ') || 'none'}`, 'check how the client sets and reads it (cloud/annotations.proto)');
      }
      if (field.options?.deprecated && !was.options?.deprecated) add('additive', file, subject, 'the field is deprecated', 'plan to stop using it');
      documented(file, subject, commentAt(old.file.sourceCodeInfo, [...old.path, 2, before.at]), commentAt(file.sourceCodeInfo, [...path, 2, at]));
    }
  }

  for (const [name, { file }] of oldIndex.enums) {
    if (!newIndex.enums.has(name)) add('breaking', file, `enum ${name}`, 'the enum was removed', 'stop using it');
  }
  for (const [name, { file, enumType, path }] of newIndex.enums) {
    const old = oldIndex.enums.get(name);
    if (!old) {
      add('additive', file, `enum ${name}`, 'the enum was added', 'nothing to do');
      continue;
    }
    documented(file, `enum ${name}`, commentAt(old.file.sourceCodeInfo, old.path), commentAt(file.sourceCodeInfo, path));
    for (const value of old.enumType.value) {
      const now = enumType.value.find((candidate) => candidate.number === value.number);
      if (!now) add('breaking', file, `enum ${name}`, `the value ${value.name} (${value.number}) was removed`, `stop sending ${value.name}`);
      else if (now.name !== value.name) add('breaking', file, `enum ${name}`, `the value ${value.number} was renamed from ${value.name} to ${now.name}`, `use ${now.name} in code and JSON`);
    }
    enumType.value.forEach((value, at) => {
      const before = old.enumType.value.findIndex((candidate) => candidate.number === value.number);
      if (before === -1) {
        add('dangerous', file, `enum ${name}`, `the value ${value.name} (${value.number}) was added`, `handle ${value.name} (and unknown values) where the client switches over the enum`);
      } else {
        documented(file, `${name}.${value.name}`, commentAt(old.file.sourceCodeInfo, [...old.path, 2, before]), commentAt(file.sourceCodeInfo, [...path, 2, at]));
      }
    });
  }

  const services = (files: Map<string, FileDescriptorProto>) =>
    new Map([...files.values()].flatMap((file) => file.service.map((service, at) => [`${file.package}.${service.name}`, { file, service, at }] as const)));
  const oldServices = services(released);
  const newServices = services(current);
  for (const [name, { file }] of oldServices) {
    if (!newServices.has(name)) add('breaking', file, name, 'the service was removed', 'stop calling its RPCs');
  }
  for (const [name, { file, service, at }] of newServices) {
    const old = oldServices.get(name);
    if (!old) {
      add('additive', file, name, `the service was added (${service.method.map((method) => method.name).join(', ')})`, 'nothing to do; call it to use it');
      continue;
    }
    documented(file, name, commentAt(old.file.sourceCodeInfo, [6, old.at]), commentAt(file.sourceCodeInfo, [6, at]));
    for (const method of old.service.method) {
      if (!service.method.some((candidate) => candidate.name === method.name)) add('breaking', file, `${name}.${method.name}`, 'the RPC was removed', 'stop calling it');
    }
    service.method.forEach((method, methodAt) => {
      const subject = `${name}.${method.name}`;
      const beforeAt = old.service.method.findIndex((candidate) => candidate.name === method.name);
      const before = old.service.method[beforeAt];
      if (!before) {
        add('additive', file, subject, `the RPC was added (${method.inputType.replace(/^\./, '')} → ${method.outputType.replace(/^\./, '')})`, 'nothing to do; call it to use it');
        return;
      }
      if (before.inputType !== method.inputType) add('breaking', file, subject, `the request type changed from ${before.inputType.replace(/^\./, '')} to ${method.inputType.replace(/^\./, '')}`, 'send the new request type');
      if (before.outputType !== method.outputType) add('breaking', file, subject, `the response type changed from ${before.outputType.replace(/^\./, '')} to ${method.outputType.replace(/^\./, '')}`, 'read the new response type');
      if (Boolean(before.clientStreaming) !== Boolean(method.clientStreaming) || Boolean(before.serverStreaming) !== Boolean(method.serverStreaming)) {
        add('breaking', file, subject, 'the streaming mode changed', 'call it with the new streaming mode');
      }
      if (method.options?.deprecated && !before.options?.deprecated) add('additive', file, subject, 'the RPC is deprecated', 'plan to stop calling it');
      documented(file, subject, commentAt(old.file.sourceCodeInfo, [6, old.at, 2, beforeAt]), commentAt(file.sourceCodeInfo, [6, at, 2, methodAt]));
    });
  }
  return changes;
}
