/**
 * How `cfs` prints: `--format json|yaml|table` (table by default on a terminal, JSON when piped,
 * so scripts get JSON without asking), and errors with their ServiceError details and request id
 * on stderr, with an exit code a script can branch on.
 */
import { createRegistry, toJson, type DescMessage, type JsonValue, type MessageShape } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { stringify } from 'yaml';
import { file_google_rpc_status } from '../../generated/proto/google/rpc/status_pb.js';
import { file_cloud_common_v1_error } from '../../generated/proto/cloud/common/v1/error_pb.js';
import { file_cloud_common_v1_operation } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import { file_cloud_compute_v1_instance_service } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { file_cloud_iam_v1_project_service } from '../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { file_cloud_iam_v1_service_account_service } from '../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { file_cloud_iam_v1_auth_public_key_service } from '../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { file_cloud_iam_v1_profile_service } from '../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { describeServiceErrors, requestIdOf } from '../sdk/index.js';

export type Format = 'json' | 'yaml' | 'table';
export const FORMATS: readonly Format[] = ['json', 'yaml', 'table'];

/** Every message an Operation's `request` and `progress_data` Anys may hold, so operations print as readable JSON. */
const registry = createRegistry(
  file_google_rpc_status,
  file_cloud_common_v1_error,
  file_cloud_common_v1_operation,
  file_cloud_compute_v1_instance_service,
  file_cloud_iam_v1_project_service,
  file_cloud_iam_v1_service_account_service,
  file_cloud_iam_v1_auth_public_key_service,
  file_cloud_iam_v1_profile_service,
);

/** A usage error: exit 2 with the message (and no stack). */
export class UsageError extends Error {}

/**
 * Exit codes (docs/cloud-api.md, "cfs"): 0 success; 1 any other failure (a failed operation, a
 * refused call); 2 usage; 3 a wait that timed out; 4 not found; 5 permission denied or not
 * authenticated; 6 the server unavailable (unreachable, UNAVAILABLE, deadline exceeded).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, timeout: 3, notFound: 4, denied: 5, unavailable: 6 } as const;

export function exitCodeOf(error: unknown): number {
  if (error instanceof UsageError || String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS')) return EXIT.usage;
  if (!(error instanceof ConnectError)) return EXIT.failed;
  switch (error.code) {
    case Code.NotFound:
      return EXIT.notFound;
    case Code.PermissionDenied:
    case Code.Unauthenticated:
      return EXIT.denied;
    case Code.Unavailable:
    case Code.DeadlineExceeded:
      return EXIT.unavailable;
    default:
      return EXIT.failed;
  }
}

/** The error as an operator reads it: the code and message, then each ServiceError detail and the request id. */
export function describeError(error: unknown): string {
  if (!(error instanceof ConnectError)) return `cfs: ${error instanceof Error ? error.message : String(error)}`;
  const lines = [`cfs: ${codeName(error.code)}: ${error.rawMessage}`];
  for (const detail of describeServiceErrors(error)) lines.push(`  ${detail}`);
  const requestId = requestIdOf(error);
  if (requestId !== '') lines.push(`  request id: ${requestId}`);
  return lines.join('\n');
}

/** UPPER_SNAKE as gRPC spells codes (connect's enum is PascalCase). */
function codeName(code: Code): string {
  return (Code[code] ?? String(code)).replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}

/** The format in effect: the flag, else table on a terminal and JSON otherwise. */
export function resolveFormat(flag: string | undefined, isTty = Boolean(process.stdout.isTTY)): Format {
  if (flag === undefined) return isTty ? 'table' : 'json';
  if (!(FORMATS as readonly string[]).includes(flag)) throw new UsageError(`--format must be one of ${FORMATS.join(', ')}, got "${flag}"`);
  return flag as Format;
}

export function print(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

export function messageJson<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): JsonValue {
  return toJson(schema, message, { registry });
}

/** One message in the chosen format (a table is its fields, one per line). */
export function printMessage<Desc extends DescMessage>(format: Format, schema: Desc, message: MessageShape<Desc>): void {
  const json = messageJson(schema, message);
  if (format === 'json') print(JSON.stringify(json, null, 2));
  else if (format === 'yaml') print(stringify(json));
  else
    print(
      renderTable(
        ['FIELD', 'VALUE'],
        flatten(json).map(([path, value]) => [path, value]),
      ),
    );
}

/** A list in the chosen format: JSON/YAML an array of items, a table one row per item. */
export function printList<Desc extends DescMessage>(format: Format, schema: Desc, items: Array<MessageShape<Desc>>): void {
  const json = items.map((item) => messageJson(schema, item));
  if (format === 'json') print(JSON.stringify(json, null, 2));
  else if (format === 'yaml') print(json.length === 0 ? '[]' : stringify(json));
  else print(renderTable(...rowsOf(json)));
}

/** Resources show id, name, parent, state/activity and creation; anything else its top-level scalars. */
function rowsOf(items: JsonValue[]): [string[], string[][]] {
  const flat = items.map((item) => new Map(flatten(item)));
  const preferred: Array<[string, string]> = [
    ['ID', 'metadata.id'],
    ['NAME', 'metadata.name'],
    ['PARENT', 'metadata.parentId'],
    ['STATE', 'status.state'],
    ['ACTIVE', 'status.active'],
    ['CREATED', 'metadata.createdAt'],
    ['ID', 'id'],
    ['DESCRIPTION', 'description'],
    ['RESOURCE', 'resourceId'],
    ['STATUS', 'status.code'],
    ['FINISHED', 'finishedAt'],
  ];
  const columns = preferred.filter(([, path]) => flat.some((row) => row.has(path)));
  const used =
    columns.length > 0
      ? columns
      : [...new Set(flat.flatMap((row) => [...row.keys()]))].slice(0, 6).map((path) => [path.toUpperCase(), path] as [string, string]);
  return [used.map(([title]) => title), flat.map((row) => used.map(([, path]) => row.get(path) ?? ''))];
}

/** Leaf paths of a JSON value, dotted, with scalar values as text. */
function flatten(value: JsonValue, prefix = ''): Array<[string, string]> {
  if (value === null || typeof value !== 'object') return [[prefix, String(value)]];
  const entries = Array.isArray(value) ? value.map((item, index) => [String(index), item] as const) : Object.entries(value);
  if (entries.length === 0) return prefix === '' ? [] : [[prefix, Array.isArray(value) ? '[]' : '{}']];
  return entries.flatMap(([key, item]) => flatten(item as JsonValue, prefix === '' ? key : `${prefix}.${key}`));
}

function renderTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
