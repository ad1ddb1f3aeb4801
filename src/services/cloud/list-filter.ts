import { getOption, hasOption, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { credentials, sensitive } from '../../../generated/proto/cloud/annotations_pb.js';
import { AppError } from '../../errors.js';
import { compileFilter, FilterError, type Filter, type FilterOptions } from '../../engines/filter/index.js';
import { OperationSchema } from '../../../generated/proto/cloud/common/v1/operation_pb.js';
import { StatusSchema } from '../../../generated/proto/google/rpc/status_pb.js';

/** Secrets are not filterable (a filter on them would read them out one guess at a time), and the JSON `doc` leaves them out. */
function isSecret(field: DescField): boolean {
  return (hasOption(field, sensitive) && getOption(field, sensitive)) || (hasOption(field, credentials) && getOption(field, credentials));
}

/**
 * The `filter` of a cloud List, checked against the listed resource's message (docs/cloud-api.md,
 * "List filters"), `labels` standing for `metadata.labels`; empty → undefined. A malformed or ill-typed filter → INVALID_ARGUMENT whose
 * message names the column and a bad_request violation on `filter`.
 */
export function listFilter(text: string, schema: DescMessage, options: FilterOptions = {}): Filter | undefined {
  const hidden = options.hidden;
  try {
    return compileFilter(text, schema, {
      ...options,
      aliases: { labels: 'metadata.labels', ...options.aliases },
      hidden: (field) => isSecret(field) || (hidden?.(field) ?? false),
    });
  } catch (error) {
    if (!(error instanceof FilterError)) throw error;
    throw new AppError('invalid_argument', `filter: ${error.message}`, { violations: [{ field: 'filter', message: error.message }] });
  }
}

/**
 * What a filtered list's page tokens are bound to: the list and the filter's text, so a token is
 * refused with another filter (its position would mean something else there).
 */
export function filteredScope(scope: string, filterText: string): string {
  return filterText.trim() === '' ? scope : `${scope}:filter:${filterText.trim()}`;
}

/**
 * The fields of an Operation a filter may name (docs/cloud-api.md, "List filters"), by message:
 * the stored columns, `status` (set once done) and its `code`. The request, its headers, the
 * progress and the status's message and details are stored as protobuf, not filterable.
 */
const OPERATION_FILTER_FIELDS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  [OperationSchema.typeName, new Set(['id', 'description', 'created_at', 'created_by', 'finished_at', 'resource_id', 'status'])],
  [StatusSchema.typeName, new Set(['code'])],
]);

/** The `filter` of an operations List (OperationService.List, ListOperationsByParent); empty → undefined; as listFilter. */
export function operationListFilter(text: string): Filter | undefined {
  return listFilter(text, OperationSchema, {
    hidden: (field) => !(OPERATION_FILTER_FIELDS.get(field.parent.typeName)?.has(field.name) ?? false),
  });
}
