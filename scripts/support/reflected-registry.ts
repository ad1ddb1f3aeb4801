import { create, createFileRegistry, type FileRegistry } from '@bufbuild/protobuf';
import { FileDescriptorSetSchema, type FileDescriptorProto } from '@bufbuild/protobuf/wkt';

/**
 * The registry of files a reflection client received, by name. Reflection answers a file before its
 * dependencies; a FileDescriptorSet needs them first, so they are placed in dependency order.
 */
export function reflectedRegistry(files: ReadonlyMap<string, FileDescriptorProto>): FileRegistry {
  const ordered: FileDescriptorProto[] = [];
  const placed = new Set<string>();
  const place = (file: FileDescriptorProto): void => {
    if (placed.has(file.name)) return;
    placed.add(file.name);
    for (const dependency of file.dependency) {
      const found = files.get(dependency);
      if (!found) throw new Error(`reflection did not send ${dependency}, imported by ${file.name}`);
      place(found);
    }
    ordered.push(file);
  };
  for (const file of files.values()) place(file);
  return createFileRegistry(create(FileDescriptorSetSchema, { file: ordered }));
}
