import { toJsonString, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { redactSecrets } from '../engines/operations/index.js';

/**
 * The `doc` column of a stored cloud resource: the resource in its JSON mapping (field JSON names,
 * enums by value name, int64 as strings, timestamps as RFC 3339), every implicit field written even
 * at its default so a filter on it finds a value, secrets (`sensitive`, `credentials`) left out.
 * List filters read it (docs/cloud-api.md, "List filters"); the binary `data` stays the source of truth.
 */
export function resourceDocument<Desc extends DescMessage>(schema: Desc, resource: MessageShape<Desc>): string {
  return toJsonString(schema, redactSecrets(schema, resource), { alwaysEmitImplicit: true });
}
