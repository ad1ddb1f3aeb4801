import { toBinary, type DescExtension, type DescFile, type DescService } from '@bufbuild/protobuf';
import { nestedTypes } from '@bufbuild/protobuf/reflect';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';

/**
 * What gRPC server reflection answers, computed from the descriptors the generated code embeds: the
 * services a server registered, and every proto file they need (transitively), serialized as
 * FileDescriptorProto. No .proto file is read at run time.
 */
export class DescriptorIndex {
  private readonly services: string[];
  private readonly files = new Map<string, DescFile>();
  private readonly symbols = new Map<string, DescFile>();
  private readonly extensions: DescExtension[] = [];

  constructor(services: Iterable<DescService>) {
    const names = new Set<string>();
    const visit = (file: DescFile) => {
      if (this.files.has(file.proto.name)) return;
      this.files.set(file.proto.name, file);
      for (const dependency of file.dependencies) visit(dependency);
      for (const type of nestedTypes(file)) {
        this.symbols.set(type.typeName, file);
        if (type.kind === 'service') for (const method of type.methods) this.symbols.set(`${type.typeName}.${method.name}`, file);
        if (type.kind === 'extension') this.extensions.push(type);
      }
    };
    for (const service of services) {
      names.add(service.typeName);
      visit(service.file);
    }
    this.services = [...names].sort();
  }

  /** Full names of the registered services (`cloud.compute.v1.InstanceService`), sorted. */
  serviceNames(): string[] {
    return this.services;
  }

  /** The file named `name` (`cloud/common/v1/operation.proto`) and its dependencies, or undefined. */
  fileByFilename(name: string): Uint8Array[] | undefined {
    const file = this.files.get(name);
    return file && this.withDependencies(file);
  }

  /** The file declaring a service, method, message, enum or extension (fully qualified, no leading dot). */
  fileContainingSymbol(symbol: string): Uint8Array[] | undefined {
    const file = this.symbols.get(symbol.replace(/^\./, ''));
    return file && this.withDependencies(file);
  }

  /** The file declaring extension `number` of message type `extendee`. */
  fileContainingExtension(extendee: string, number: number): Uint8Array[] | undefined {
    const extension = this.extensions.find((candidate) => candidate.extendee.typeName === extendee && candidate.number === number);
    return extension && this.withDependencies(extension.file);
  }

  /** The numbers of every known extension of message type `extendee`, or undefined for an unknown type. */
  extensionNumbers(extendee: string): number[] | undefined {
    if (!this.symbols.has(extendee)) return undefined;
    return this.extensions.filter((extension) => extension.extendee.typeName === extendee).map((extension) => extension.number);
  }

  /** The file first, then every transitive dependency once (reflection clients need them to link). */
  private withDependencies(file: DescFile): Uint8Array[] {
    const ordered: DescFile[] = [];
    const seen = new Set<string>();
    const walk = (current: DescFile) => {
      if (seen.has(current.proto.name)) return;
      seen.add(current.proto.name);
      ordered.push(current);
      for (const dependency of current.dependencies) walk(dependency);
    };
    walk(file);
    return ordered.map((entry) => toBinary(FileDescriptorProtoSchema, entry.proto));
  }
}
