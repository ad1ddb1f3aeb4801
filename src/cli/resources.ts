/**
 * The resource commands, generated from the proto descriptors so every service and verb behaves
 * alike: `cfs <area> <resource> <verb>` (`cfs compute instance create`, `cfs iam service-account
 * list`…) and `cfs operation get|list`. A request's fields become flags (metadata's and spec's
 * fields hoisted: `--name`, `--parent-id`, `--description`, `--resources-platform`; map fields as
 * `--labels key=value`, repeated ones repeatable); `--file` takes the whole request as JSON or YAML
 * (proto JSON names) and flags override it. Mutating verbs wait for their operation unless
 * `--async` (OperationService.Wait, a progress line on a terminal); `operation cancel <id>` cancels one;
 * `update` reads the resource, applies the flags and sends it whole with the reset mask the Go SDK
 * computes for a full update (a map given replaces the stored one; `--remove-<map> KEY` drops single
 * keys); List verbs print every page.
 */
import { readFileSync } from 'node:fs';
import {
  fromJson,
  getOption,
  ScalarType,
  type DescField,
  type DescMessage,
  type DescMethod,
  type DescService,
  type JsonObject,
  type JsonValue,
  type MessageShape,
} from '@bufbuild/protobuf';
import type { CallOptions } from '@connectrpc/connect';
import { parse as parseYaml } from 'yaml';
import { FieldBehavior, field_behavior } from '../../generated/proto/cloud/annotations_pb.js';
import { OperationSchema, type Operation } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import { OperationService } from '../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { cloudProtoFiles } from '../../generated/proto/cloud-files.js';
import { ProjectService } from '../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { ServiceAccountService } from '../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { isMutating, pagedField, resetMaskFromMessage, type CloudSdk, type Pageable } from '../sdk/index.js';
import type { Command, CommandContext, OptionSpec } from './command.js';
import { stringValue } from './command.js';
import { EXIT, messageJson, print, printList, printMessage, UsageError } from './output.js';
import { progressLine } from './progress.js';

/**
 * The services with resources — every service of the cloud protos with Create, Get and List
 * (generated/proto/cloud-files.ts, so a new resource service gets its commands with nothing edited
 * here) — and whether a resource's parent is a project (every resource's but a project's; then the
 * profile's project is the default parent).
 */
function resourceServices(): Array<{ service: DescService; parentIsProject: boolean }> {
  return cloudProtoFiles
    .flatMap((file) => file.services)
    .filter((service) => ['Create', 'Get', 'List'].every((name) => service.methods.some((method) => method.name === name)))
    .map((service) => ({ service, parentIsProject: service.typeName !== ProjectService.typeName }));
}

/**
 * Against a server without OperationService.Wait, operations poll every 250 ms (an operator waits for
 * seconds, not for the Go SDK's 1 s steps); on a terminal the progress line is refreshed as often.
 */
export const CLI_POLL_MS = 250;

/** kebab-case of a PascalCase or snake_case name: GetByName → get-by-name, parent_id → parent-id. */
function kebab(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/_/g, '-')
    .toLowerCase();
}

/** One flag: where it goes in the request (JSON names) and how its text becomes a JSON value. */
interface FieldFlag {
  flag: string;
  /** JSON names, where the value goes in the request. */
  path: string[];
  /** Proto names, for help. */
  protoPath: string;
  field: DescField;
}

const HOISTED = new Set(['metadata', 'spec']);

function outputOnly(field: DescField): boolean {
  return getOption(field, field_behavior).includes(FieldBehavior.OUTPUT_ONLY);
}

/** The flags of a request message: scalar leaves (two levels below metadata/spec), maps of scalars and repeated scalars. */
function fieldFlags(input: DescMessage): FieldFlag[] {
  const leaves: Array<{ names: string[]; path: string[]; field: DescField }> = [];
  const walk = (message: DescMessage, names: string[], path: string[], depth: number) => {
    for (const field of message.fields) {
      if (outputOnly(field)) continue;
      const here = { names: [...names, field.name], path: [...path, field.jsonName] };
      if (field.fieldKind === 'message' && field.message.typeName !== 'google.protobuf.Timestamp') {
        if (depth < 2) walk(field.message, here.names, here.path, depth + 1);
        continue;
      }
      if (field.fieldKind === 'list' && field.listKind === 'message') continue;
      if (field.fieldKind === 'map' && field.mapKind === 'message') continue;
      leaves.push({ ...here, field });
    }
  };
  walk(input, [], [], 0);
  const short = (names: string[]) => kebab((HOISTED.has(names[0] ?? '') && names.length > 1 ? names.slice(1) : names).join('_'));
  const counts = new Map<string, number>();
  for (const leaf of leaves) counts.set(short(leaf.names), (counts.get(short(leaf.names)) ?? 0) + 1);
  return leaves.map((leaf) => ({
    flag: (counts.get(short(leaf.names)) ?? 0) > 1 ? kebab(leaf.names.join('_')) : short(leaf.names),
    path: leaf.path,
    protoPath: leaf.names.join('.'),
    field: leaf.field,
  }));
}

function optionOf(flag: FieldFlag): OptionSpec {
  const { field } = flag;
  const where = flag.protoPath;
  if (field.fieldKind === 'map') return { type: 'string', multiple: true, placeholder: 'KEY=VALUE', describe: where };
  if (field.fieldKind === 'list') return { type: 'string', multiple: true, placeholder: 'VALUE', describe: `${where} (an empty value clears it)` };
  if (field.fieldKind === 'scalar' && field.scalar === ScalarType.BOOL) return { type: 'boolean', describe: where };
  if (field.fieldKind === 'enum') {
    const values = field.enum.values.filter((value) => value.number !== 0).map((value) => value.localName);
    return { type: 'string', placeholder: values.join('|'), describe: where };
  }
  return {
    type: 'string',
    placeholder: field.fieldKind === 'message' ? 'RFC3339' : field.fieldKind === 'scalar' && field.scalar !== ScalarType.STRING ? 'NUMBER' : 'STRING',
    describe: where,
  };
}

/** The JSON a flag's text stands for. */
function jsonOfFlag(flag: FieldFlag, raw: string | boolean | string[]): JsonValue {
  const { field } = flag;
  if (field.fieldKind === 'map') {
    const entries: JsonObject = {};
    // `--labels ""` is the empty map: on update, every key removed.
    if ((raw as string[]).length === 1 && (raw as string[])[0] === '') return entries;
    for (const pair of raw as string[]) {
      const equals = pair.indexOf('=');
      if (equals <= 0) throw new UsageError(`--${flag.flag} takes KEY=VALUE, got "${pair}"`);
      entries[pair.slice(0, equals)] = pair.slice(equals + 1);
    }
    return entries;
  }
  if (field.fieldKind === 'list') {
    const values = raw as string[];
    return values.length === 1 && values[0] === '' ? [] : values;
  }
  if (field.fieldKind === 'enum') {
    const text = String(raw);
    const value = field.enum.values.find((candidate) => candidate.name === text || candidate.localName === text.toUpperCase());
    if (!value) throw new UsageError(`--${flag.flag} must be one of ${field.enum.values.map((candidate) => candidate.localName).join(', ')}, got "${text}"`);
    return value.name;
  }
  return raw as JsonValue;
}

function setPath(target: JsonObject, path: string[], value: JsonValue): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) node[key] = {};
    node = node[key] as JsonObject;
  }
  node[path.at(-1) ?? ''] = value;
}

const isObject = (value: JsonValue | undefined): value is JsonObject => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Deep merge for an update, by the message's schema: a message field given merges field by field
 * into the stored one; anything else given replaces it — lists, and maps too (`--labels`, or
 * `labels: {}` in --file), whose keys are their value: merged, a key could never be removed. Keys
 * are written under their JSON names, whichever spelling the file used.
 */
function mergeJson(message: DescMessage, base: JsonValue, over: JsonValue): JsonValue {
  if (!isObject(base) || !isObject(over)) return over;
  const out: JsonObject = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const field = message.fields.find((candidate) => candidate.jsonName === key || candidate.name === key);
    const name = field?.jsonName ?? key;
    if (name !== key) delete out[key];
    out[name] = field?.fieldKind === 'message' && name in out ? mergeJson(field.message, out[name] as JsonValue, value as JsonValue) : (value as JsonValue);
  }
  return out;
}

/** The option of update that removes single keys of a map flag: `--remove-labels KEY` for `--labels`. */
const removeOption = (flag: FieldFlag) => `remove-${flag.flag}`;

/** Drops the keys `--remove-<map>` names from the merged request (absent keys are no error). */
function removeMapKeys(verb: Verb, context: CommandContext, request: JsonObject): void {
  for (const flag of verb.flags) {
    const keys = context.values[removeOption(flag)];
    if (flag.field.fieldKind !== 'map' || !Array.isArray(keys)) continue;
    const map = flag.path.reduce<JsonValue | undefined>((node, key) => (isObject(node) ? node[key] : undefined), request);
    if (isObject(map)) for (const key of keys) delete map[key];
  }
}

function readRequestFile(path: string): JsonObject {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed: unknown = parseYaml(text);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError(`${path} must hold the request as a JSON or YAML object`);
  return parsed as JsonObject;
}

/** The id a verb addresses (`get <id>`, `update <id>`), when it addresses one. */
function positionalId(verb: Verb): FieldFlag | undefined {
  const id = verb.flags.find((flag) => flag.flag === 'id');
  return id && (id.path.length === 1 || verb.method.name === 'Update') ? id : undefined;
}

interface Verb {
  service: DescService;
  method: DescMethod;
  flags: FieldFlag[];
  parentIsProject: boolean;
}

/** The request JSON from --file, flags, the positional id and the profile's default project. */
function requestJson(verb: Verb, context: CommandContext): JsonObject {
  const json = typeof context.values.file === 'string' ? readRequestFile(context.values.file) : {};
  for (const flag of verb.flags) {
    const raw = context.values[flag.flag];
    if (raw !== undefined) setPath(json, flag.path, jsonOfFlag(flag, raw));
  }
  const idFlag = positionalId(verb);
  const [id, ...extra] = context.positionals;
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  if (id !== undefined) {
    if (!idFlag) throw new UsageError(`unexpected argument "${id}" (options are given as --name value)`);
    setPath(json, idFlag.path, id);
  }
  const parent = verb.flags.find((flag) => flag.flag === 'parent-id');
  const project = context.session.project;
  if (parent && verb.parentIsProject && project && context.values['parent-id'] === undefined && verb.method.name !== 'Update') {
    const current = parent.path.reduce<JsonValue | undefined>(
      (node, key) => (node && typeof node === 'object' && !Array.isArray(node) ? node[key] : undefined),
      json,
    );
    if (current === undefined || current === '') setPath(json, parent.path, project);
  }
  return json;
}

function toRequest(verb: Verb, json: JsonObject): MessageShape<DescMessage> {
  try {
    return fromJson(verb.method.input, json);
  } catch (error) {
    throw new UsageError(`not a valid ${verb.method.input.name}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

type AnyCall = (request: unknown, options?: CallOptions) => Promise<MessageShape<DescMessage>> | Pageable<MessageShape<DescMessage>, MessageShape<DescMessage>>;

function callOf(sdk: CloudSdk, verb: Verb, name = verb.method.localName): AnyCall {
  const call = (sdk.client(verb.service) as unknown as Record<string, AnyCall | undefined>)[name];
  if (!call) throw new Error(`${verb.service.typeName} has no ${name}`);
  return call;
}

/** Mutations: wait unless --async, then print the operation; a failed one exits 1 with its error on stderr (main prints it). */
async function finishOperation(context: CommandContext, sdk: CloudSdk, operation: Operation): Promise<number> {
  const format = context.session.format;
  if (context.values.async === true) {
    printMessage(format, OperationSchema, operation);
    return EXIT.ok;
  }
  const line = progressLine(process.stderr);
  let done: Operation;
  try {
    done = await sdk.wait(operation, { intervalMs: CLI_POLL_MS, onProgress: line.onProgress });
  } finally {
    line.done();
  }
  printMessage(format, OperationSchema, done);
  return EXIT.ok;
}

async function runVerb(verb: Verb, context: CommandContext): Promise<number> {
  context.session.requireCredentials();
  const sdk = context.session.sdk();
  const json = requestJson(verb, context);
  const format = context.session.format;
  const items = pagedField(verb.method);

  if (verb.method.name === 'Update') return runUpdate(verb, context, sdk, json);
  const request = toRequest(verb, json);
  const result = callOf(sdk, verb)(request);
  if (items !== undefined && context.values['page-token'] === undefined && context.values['page-size'] === undefined) {
    const all: Array<MessageShape<DescMessage>> = [];
    for await (const item of result as Pageable<MessageShape<DescMessage>, MessageShape<DescMessage>>) all.push(item);
    const itemSchema = verb.method.output.fields.find((field) => field.localName === items);
    if (itemSchema?.fieldKind !== 'list' || itemSchema.listKind !== 'message') throw new Error('unreachable: a paged field is a list of messages');
    if (legacyLines(verb, context)) {
      for (const item of all as Array<{ metadata?: { id: string; name: string } }>) print(`${item.metadata?.id ?? ''} ${item.metadata?.name ?? ''}`);
      return EXIT.ok;
    }
    printList(format, itemSchema.message, all);
    return EXIT.ok;
  }
  const response = await result;
  if (isMutating(verb.method)) return finishOperation(context, sdk, response as Operation);
  printMessage(format, verb.method.output, response);
  return EXIT.ok;
}

/** `cfs iam project list` printed "<id> <name>" lines before formats existed; without --format it still does. */
function legacyLines(verb: Verb, context: CommandContext): boolean {
  return verb.service === ProjectService && verb.method.name === 'List' && !context.session.formatGiven;
}

/**
 * Update as the Go SDK's full update: read the resource, apply the flags to it, send it whole with
 * the reset mask computed from the message (every unset or default field named), and the stored
 * resource_version, so a concurrent change is refused (ABORTED, resource_conflict) rather than lost.
 */
async function runUpdate(verb: Verb, context: CommandContext, sdk: CloudSdk, changes: JsonObject): Promise<number> {
  const id = ((changes.metadata as JsonObject | undefined)?.id ?? '') as string;
  if (id === '') throw new UsageError('the id is required: cfs … update <id> or --id');
  const get = verb.service.methods.find((method) => method.name === 'Get');
  if (!get) throw new Error(`${verb.service.typeName} has no Get`);
  const current = (await callOf(sdk, verb, get.localName)({ id })) as MessageShape<DescMessage>;
  const currentJson = messageJson(get.output, current) as JsonObject;
  const whole: JsonObject = {};
  for (const field of verb.method.input.fields) if (currentJson[field.jsonName] !== undefined) whole[field.jsonName] = currentJson[field.jsonName] as JsonValue;
  const merged = mergeJson(verb.method.input, whole, changes) as JsonObject;
  removeMapKeys(verb, context, merged);
  const request = toRequest(verb, merged);
  const headers = { 'x-resetmask': resetMaskFromMessage(verb.method.input, request) };
  const operation = (await callOf(sdk, verb)(request, { headers })) as Operation;
  return finishOperation(context, sdk, operation);
}

/** What the commands that predate the generated ones said in their help (docs/iam.md shows them). */
const LEGACY_HELP: Record<string, { usage: string; text: string }> = {
  'iam project create': {
    usage: 'cfs iam project create --name NAME [--description TEXT] [--token TOKEN]',
    text: 'Creates a project under the installation\'s tenant and prints the operation. Its "resourceId" is the new project id.',
  },
  'iam project list': {
    usage: 'cfs iam project list [--token TOKEN]',
    text: 'Prints the projects the caller may see; without --format one "<id> <name>" per line, as before formats existed.',
  },
  'iam service-account create': {
    usage: 'cfs iam service-account create --project PROJECT_ID --name NAME [--description TEXT] [--token TOKEN]',
    text: 'Creates a service account and prints the operation. Its "resourceId" is the new service account id.',
  },
};

function verbCommand(verb: Verb, words: string[]): Command {
  const options: Record<string, OptionSpec> = {};
  for (const flag of verb.flags) options[flag.flag] = optionOf(flag);
  for (const flag of verb.method.name === 'Update' ? verb.flags : []) {
    if (flag.field.fieldKind !== 'map') continue;
    options[flag.flag] = { ...optionOf(flag), describe: `${flag.protoPath}: replaces the whole map ("" clears it)` };
    options[removeOption(flag)] = { type: 'string', multiple: true, placeholder: 'KEY', describe: `removes KEY from ${flag.protoPath}, keeping the others` };
  }
  options.file = { type: 'string', placeholder: 'PATH', describe: 'the request as JSON or YAML (proto JSON names; - for stdin); flags override it' };
  if (verb.parentIsProject && options['parent-id']) options['parent-id'].describe = `${options['parent-id'].describe ?? ''} (default: the profile's project)`;
  if (verb.parentIsProject || verb.service === ServiceAccountService)
    options.project = { type: 'string', placeholder: 'PROJECT_ID', describe: 'the same as --parent-id' };
  if (isMutating(verb.method)) options.async = { type: 'boolean', describe: 'print the operation at once instead of waiting for it' };
  const hasId = positionalId(verb) !== undefined;
  const mutating = isMutating(verb.method);
  const summary = `${verb.service.typeName}.${verb.method.name}${mutating ? ': waits for the operation (unless --async) and prints it' : ''}${
    verb.method.name === 'Update' ? '. Reads the resource, applies the options and sends it whole with the X-ResetMask of a full update (Go SDK).' : ''
  }${pagedField(verb.method) ? '. Prints every page unless --page-size or --page-token is given.' : ''}`;
  const legacy = LEGACY_HELP[words.join(' ')];
  return {
    words,
    summary: legacy ? `${legacy.usage}\n\n${legacy.text} (${summary})` : summary,
    args: hasId ? '[<id>]' : undefined,
    options,
    run: (context) => {
      const project = stringValue(context.values.project);
      if (project !== undefined) {
        if (context.values['parent-id'] !== undefined) throw new UsageError('--project and --parent-id are the same option: give one');
        context.values['parent-id'] = project;
      }
      return runVerb(verb, context);
    },
  };
}

/** Every generated command. */
export function resourceCommands(): Command[] {
  const commands: Command[] = [];
  for (const { service, parentIsProject } of resourceServices()) {
    const [, area = ''] = service.typeName.split('.');
    const resource = kebab(service.name.replace(/Service$/, ''));
    for (const method of service.methods) {
      if (method.methodKind !== 'unary') continue;
      const verb: Verb = { service, method, flags: fieldFlags(method.input), parentIsProject };
      commands.push(verbCommand(verb, [area, resource, kebab(method.name)]));
    }
  }
  for (const method of OperationService.methods) {
    const verb: Verb = { service: OperationService, method, flags: fieldFlags(method.input), parentIsProject: false };
    commands.push(verbCommand(verb, ['operation', kebab(method.name)]));
  }
  return commands;
}
