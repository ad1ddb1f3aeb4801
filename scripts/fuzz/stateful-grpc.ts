/**
 * Stateful sequences over gRPC for the cloud API, with nothing but server reflection: a
 * @grpc/grpc-js client asks the server (grpc.reflection.v1) for its services and their descriptors,
 * picks every resource service (one with Create, Get and Delete), and per sequence runs
 * Create → Get → Update (or Deactivate/Activate where there is no Update) → Get → Delete → Get, each
 * mutation's Operation waited on, requests built from the reflected descriptors (names and
 * descriptions from the sequence's seed). Every answer is checked (test/contract/grpc-checks.ts:
 * response invariants, and every error's code, ServiceError detail and x-request-id), and:
 *
 * - **invisible to peers** (docs/iam.md, "Who may call"): right after Create, a service account of
 *   another project (equal rank to the creating service account; lower than the admin who makes
 *   projects) calls every RPC of the service that takes the new id (`id` or `metadata.id`): each
 *   must fail with PERMISSION_DENIED or NOT_FOUND;
 * - **gone after delete**: once Delete's Operation is done, every RPC that takes the id answers
 *   NOT_FOUND, for the creator and for the admin.
 *
 * Sequence n of a service uses seed STATEFUL_SEED + n; STATEFUL_ONLY=grpc:<Service>:<n> replays one.
 */
import { generateKeyPairSync } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import {
  create,
  fromBinary,
  fromJson,
  getOption,
  hasOption,
  toBinary,
  toJson,
  type DescMessage,
  type DescMethod,
  type DescMethodUnary,
  type DescService,
  type FileRegistry,
  type JsonValue,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, type FileDescriptorProto } from '@bufbuild/protobuf/wkt';
import { api_service_name } from '../../generated/proto/cloud/annotations_pb.js';
import * as reflection from '../../generated/proto/grpc/reflection/v1/reflection_pb.js';
import { signServiceAccountJwt } from '../../src/engines/service-account-jwt/index.js';
import { errorProblems, responseProblems, type StatusName } from '../../test/contract/grpc-checks.js';
import { GrpcCallError, GrpcTestClient } from '../../test/support/grpc.js';
import { STATEFUL_SERVER_ENV } from './models.js';
import { reflectedRegistry } from '../support/reflected-registry.js';

export interface StatefulGrpcOptions {
  url: string;
  seed: number;
  /** Sequences per resource service. */
  sequences: number;
  only?: string;
}

export interface StatefulGrpcOutcome {
  ok: boolean;
  lines: string[];
  services: number;
  sequences: number;
  operations: number;
  longest: number;
  failures: number;
}

class SequenceFailure extends Error {}

type Json = { [key: string]: JsonValue };

/** Every service and file the server describes through reflection v1. */
async function discover(client: grpc.Client): Promise<{ services: DescService[]; registry: FileRegistry }> {
  const path = `/${reflection.ServerReflection.typeName}/ServerReflectionInfo`;
  const ask = (requests: Array<MessageInitShape<typeof reflection.ServerReflectionRequestSchema>>) =>
    new Promise<Array<MessageShape<typeof reflection.ServerReflectionResponseSchema>>>((resolve, reject) => {
      const call = client.makeBidiStreamRequest(
        path,
        (value: MessageShape<typeof reflection.ServerReflectionRequestSchema>) => Buffer.from(toBinary(reflection.ServerReflectionRequestSchema, value)),
        (buffer: Buffer) => fromBinary(reflection.ServerReflectionResponseSchema, buffer),
        new grpc.Metadata(),
      );
      const answers: Array<MessageShape<typeof reflection.ServerReflectionResponseSchema>> = [];
      call.on('data', (answer: MessageShape<typeof reflection.ServerReflectionResponseSchema>) => answers.push(answer));
      call.on('error', reject);
      call.on('end', () => resolve(answers));
      for (const request of requests) call.write(create(reflection.ServerReflectionRequestSchema, request));
      call.end();
    });
  const [list] = await ask([{ messageRequest: { case: 'listServices', value: '' } }]);
  if (list?.messageResponse.case !== 'listServicesResponse') throw new Error(`reflection list_services answered ${list?.messageResponse.case}`);
  const names = list.messageResponse.value.service.map((service) => service.name);
  const files = new Map<string, FileDescriptorProto>();
  for (const answer of await ask(names.map((name) => ({ messageRequest: { case: 'fileContainingSymbol', value: name } })))) {
    if (answer.messageResponse.case !== 'fileDescriptorResponse') throw new Error(`reflection answered ${answer.messageResponse.case}`);
    for (const bytes of answer.messageResponse.value.fileDescriptorProto) {
      const file = fromBinary(FileDescriptorProtoSchema, bytes);
      files.set(file.name, file);
    }
  }
  const registry = reflectedRegistry(files);
  return { services: names.map((name) => registry.getService(name)).filter((service): service is DescService => service !== undefined), registry };
}

/** A unary RPC found by reflection, called with a JSON request; answers the response as JSON, or throws GrpcCallError. */
class ReflectedCalls {
  operations = 0;
  trace: string[] = [];

  constructor(
    private readonly client: GrpcTestClient,
    private readonly registry: FileRegistry,
  ) {}

  async call(method: DescMethod, request: Json, token: string | undefined, who: string): Promise<Json> {
    const unary = method as DescMethodUnary<DescMessage, DescMessage>;
    const bytes = toBinary(unary.input, fromJson(unary.input, request, { registry: this.registry }));
    this.operations++;
    const label = `${this.trace.length + 1}. ${method.parent.name}.${method.name} ${JSON.stringify(request).slice(0, 160)} as ${who}`;
    try {
      const { message } = await this.client.callRaw(unary, bytes, { token });
      const problems = responseProblems(unary.output, message, this.registry);
      this.trace.push(`${label} → OK`);
      if (problems.length > 0) throw new SequenceFailure(`${method.parent.name}.${method.name} answered outside the contract: ${problems.join('; ')}`);
      return toJson(unary.output, message, { registry: this.registry }) as Json;
    } catch (error) {
      if (error instanceof GrpcCallError) this.trace.push(`${label} → ${grpc.status[error.code]}`);
      throw error;
    }
  }
}

interface Principal {
  name: string;
  token: string;
}

const method = (service: DescService, name: string): DescMethod | undefined => service.methods.find((candidate) => candidate.name === name);

function need(service: DescService | undefined, name: string): DescMethod {
  const found = service && method(service, name);
  if (!found) throw new Error(`reflection describes no ${service?.typeName ?? '(missing service)'}/${name}`);
  return found;
}

/** The RPCs of a service that take a resource's id: input field `id`, or `metadata.id`. */
function takingId(service: DescService): Array<{ method: DescMethod; request: (id: string) => Json }> {
  return service.methods
    .filter((candidate) => candidate.methodKind === 'unary')
    .flatMap((candidate): Array<{ method: DescMethod; request: (id: string) => Json }> => {
      const id = candidate.input.fields.find((field) => field.name === 'id' && field.fieldKind === 'scalar');
      if (id) return [{ method: candidate, request: (value: string) => ({ id: value }) }];
      const metadata = candidate.input.fields.find((field) => field.name === 'metadata' && field.fieldKind === 'message');
      // Only Update addresses an existing resource through `metadata` (Create and Generate make one).
      if (metadata?.message?.fields.some((field) => field.name === 'id') && candidate.name === 'Update') {
        return [{ method: candidate, request: (value: string) => ({ metadata: { id: value } }) }];
      }
      return [];
    });
}

/** Expects a failure with one of `codes`, its error well-formed; throws SequenceFailure otherwise. */
async function expectFailure(calls: ReflectedCalls, rpc: DescMethod, request: Json, who: Principal, codes: StatusName[], why: string): Promise<void> {
  const apiServiceName = hasOption(rpc.parent, api_service_name) ? getOption(rpc.parent, api_service_name) : '';
  try {
    await calls.call(rpc, request, who.token, who.name);
  } catch (error) {
    if (!(error instanceof GrpcCallError)) throw error;
    const got = grpc.status[error.code] as StatusName;
    if (!codes.includes(got))
      throw new SequenceFailure(`${rpc.parent.name}.${rpc.name} by ${who.name} ${why} failed with ${got}, not ${codes.join(' or ')}: ${error.details}`);
    const problems = errorProblems(error, got, { serviceError: true, apiServiceName });
    if (problems.length > 0) throw new SequenceFailure(`${rpc.parent.name}.${rpc.name} ${got} is malformed: ${problems.join('; ')}`);
    return;
  }
  throw new SequenceFailure(`${rpc.parent.name}.${rpc.name} by ${who.name} ${why} succeeded; wanted ${codes.join(' or ')}`);
}

/** A deterministic lowercase name for sequence `seed`. */
const nameOf = (prefix: string, seed: number) => `${prefix}-${(seed >>> 0).toString(36)}`;

export async function runStatefulGrpc(options: StatefulGrpcOptions): Promise<StatefulGrpcOutcome> {
  const client = new GrpcTestClient(options.url);
  const lines: string[] = [];
  let sequences = 0;
  let operations = 0;
  let longest = 0;
  let failures = 0;
  try {
    const signIn = await fetch(`${options.url}/api/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: STATEFUL_SERVER_ENV.ADMIN_USERNAME, password: STATEFUL_SERVER_ENV.ADMIN_PASSWORD }),
    });
    if (signIn.status !== 200) throw new Error(`admin sign-in answered ${signIn.status}`);
    const admin: Principal = { name: 'the admin', token: ((await signIn.json()) as { accessToken: string }).accessToken };
    const { services, registry } = await discover(client.client);
    const byName = new Map(services.map((service) => [service.name, service]));
    const setupCalls = new ReflectedCalls(client, registry);
    const operationService = byName.get('OperationService');
    const wait = async (calls: ReflectedCalls, operation: Json): Promise<Json> => {
      const getOperation = need(operationService, 'Get');
      let current = operation;
      for (let attempt = 0; !current.status; attempt++) {
        if (attempt > 500) throw new SequenceFailure(`operation ${String(operation.id)} did not finish`);
        await new Promise((resolve) => setTimeout(resolve, 10));
        current = await calls.call(getOperation, { id: String(operation.id) }, admin.token, admin.name);
      }
      const code = (current.status as Json).code;
      if (code !== undefined && code !== 0) throw new SequenceFailure(`operation ${String(operation.id)} failed: ${JSON.stringify(current.status)}`);
      return current;
    };
    // Two projects, a service account with a key in each, and their exchanged tokens.
    const projectService = byName.get('ProjectService');
    const accounts = byName.get('ServiceAccountService');
    const keys = byName.get('AuthPublicKeyService');
    const exchange = byName.get('TokenExchangeService');
    const robot = async (label: string): Promise<{ project: string; account: string; principal: Principal }> => {
      const project = String(
        (await wait(setupCalls, await setupCalls.call(need(projectService, 'Create'), { metadata: { name: `stateful-${label}` } }, admin.token, admin.name)))
          .resourceId,
      );
      const account = String(
        (
          await wait(
            setupCalls,
            await setupCalls.call(need(accounts, 'Create'), { metadata: { parentId: project, name: `robot-${label}` } }, admin.token, admin.name),
          )
        ).resourceId,
      );
      const generated = await setupCalls.call(need(keys, 'Generate'), { spec: { serviceAccountId: account } }, admin.token, admin.name);
      const keyId = String(((generated.key as Json).metadata as Json).id);
      const jwt = await signServiceAccountJwt({ serviceAccountId: account, keyId, privateKey: String(generated.privateKey) });
      const exchanged = await setupCalls.call(
        need(exchange, 'Exchange'),
        {
          grantType: 'urn:ietf:params:oauth:grant-type:token-exchange',
          requestedTokenType: 'urn:ietf:params:oauth:token-type:access_token',
          subjectTokenType: 'urn:ietf:params:oauth:token-type:jwt',
          subjectToken: jwt,
        },
        undefined,
        'anyone',
      );
      return { project, account, principal: { name: `service account of project ${label}`, token: String(exchanged.accessToken) } };
    };
    const a = await robot('a');
    const b = await robot('b');
    const publicPem = () => generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    // What Create needs per resource service (found by reflection: any other one with Create/Get/Delete fails the run).
    const creates: Record<string, { as: Principal; request: (seed: number) => Json }> = {
      ProjectService: { as: admin, request: (seed) => ({ metadata: { name: nameOf('project', seed) }, spec: { description: `seed ${seed}` } }) },
      ServiceAccountService: { as: a.principal, request: (seed) => ({ metadata: { parentId: a.project, name: nameOf('account', seed) } }) },
      AuthPublicKeyService: { as: a.principal, request: () => ({ spec: { serviceAccountId: a.account, data: publicPem() } }) },
      DiskService: {
        as: a.principal,
        request: (seed) => ({ metadata: { parentId: a.project, name: nameOf('disk', seed) }, spec: { sizeBytes: String(BigInt(1 + (seed % 4)) << 30n) } }),
      },
      InstanceService: {
        as: a.principal,
        request: (seed) => ({ metadata: { parentId: a.project, name: nameOf('vm', seed) }, spec: { description: `seed ${seed}` } }),
      },
    };
    const resourceServices = services.filter((service) => ['Create', 'Get', 'Delete'].every((name) => method(service, name)));
    for (const service of resourceServices) {
      const recipe = creates[service.name];
      if (!recipe) {
        failures++;
        lines.push(`failed: ${service.typeName} is a resource service (reflection) with no Create recipe in scripts/fuzz/stateful-grpc.ts`);
        continue;
      }
      for (let index = 0; index < options.sequences; index++) {
        if (options.only && options.only !== `grpc:${service.name}:${index}`) continue;
        const seed = options.seed + index;
        const calls = new ReflectedCalls(client, registry);
        sequences++;
        try {
          await runChain(calls, service, recipe.as, admin, b.principal, recipe.request(seed), seed, wait);
        } catch (error) {
          if (!(error instanceof SequenceFailure || error instanceof GrpcCallError)) throw error;
          failures++;
          lines.push(
            `failed: gRPC ${service.typeName} sequence ${index} — reproduce with STATEFUL_SEED=${options.seed} STATEFUL_ONLY=grpc:${service.name}:${index}`,
            `  problem: ${error.message.slice(0, 1500)}`,
            ...calls.trace.map((step) => `  ${step}`),
          );
        }
        operations += calls.operations;
        longest = Math.max(longest, calls.operations);
      }
    }
    return { ok: failures === 0, lines, services: resourceServices.length, sequences, operations, longest, failures };
  } finally {
    client.close();
  }
}

async function runChain(
  calls: ReflectedCalls,
  service: DescService,
  creator: Principal,
  admin: Principal,
  peer: Principal,
  request: Json,
  seed: number,
  wait: (calls: ReflectedCalls, operation: Json) => Promise<Json>,
): Promise<void> {
  const made = await wait(calls, await calls.call(need(service, 'Create'), request, creator.token, creator.name));
  const id = String(made.resourceId ?? '');
  if (!id) throw new SequenceFailure(`${service.name}.Create's Operation names no resource_id`);
  const get = need(service, 'Get');
  const got = await calls.call(get, { id }, creator.token, creator.name);
  if ((got.metadata as Json | undefined)?.id !== id)
    throw new SequenceFailure(`${service.name}.Get answered another resource: ${JSON.stringify(got.metadata)}`);
  const idRpcs = takingId(service);
  for (const { method: rpc, request: build } of idRpcs) {
    await expectFailure(calls, rpc, build(id), peer, ['PERMISSION_DENIED', 'NOT_FOUND'], `on a resource of another project`);
  }
  const update = method(service, 'Update');
  const rounds = 1 + (seed % 3);
  for (let round = 0; round < rounds; round++) {
    if (update) {
      // The spec's description where the kind has one; otherwise a label (every resource has labels).
      const mark = `round ${round} of seed ${seed}`;
      const spec = update.input.fields.find((field) => field.name === 'spec');
      const described = spec?.fieldKind === 'message' && spec.message.fields.some((field) => field.name === 'description');
      const change: Json = described ? { metadata: { id }, spec: { description: mark } } : { metadata: { id, labels: { round: `r${round}-s${seed}` } } };
      await wait(calls, await calls.call(update, change, creator.token, creator.name));
      const after = await calls.call(get, { id }, creator.token, creator.name);
      const seen = described ? (after.spec as Json | undefined)?.description : ((after.metadata as Json | undefined)?.labels as Json | undefined)?.round;
      if (seen !== (described ? mark : `r${round}-s${seed}`)) {
        throw new SequenceFailure(`${service.name}.Get after Update answered ${JSON.stringify({ metadata: after.metadata, spec: after.spec })}`);
      }
    } else {
      for (const name of ['Deactivate', 'Activate']) {
        const rpc = method(service, name);
        if (rpc) await wait(calls, await calls.call(rpc, { id }, creator.token, creator.name));
      }
      await calls.call(get, { id }, creator.token, creator.name);
    }
  }
  await wait(calls, await calls.call(need(service, 'Delete'), { id }, creator.token, creator.name));
  for (const who of creator.name === admin.name ? [admin] : [creator, admin]) {
    for (const { method: rpc, request: build } of idRpcs) {
      await expectFailure(calls, rpc, build(id), who, ['NOT_FOUND'], `after Delete`);
    }
  }
}
