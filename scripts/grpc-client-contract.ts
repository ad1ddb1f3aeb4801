/**
 * The gRPC contract test with a real @grpc/grpc-js client over h2c: it asks the live server itself
 * (gRPC server reflection) which services and RPCs it serves, runs every case of
 * test/contract/grpc-cases.ts, checks every response (decoded with protobuf-es, see
 * test/contract/grpc-checks.ts) and every error's `grpc-status-details-bin`, and fails when a served
 * RPC has no success case or no error case (the uncovered RPCs are listed).
 *
 * Standalone: `node --import tsx scripts/grpc-client-contract.ts`; scripts/contract-test.ts calls
 * `runGrpcClientContract()`.
 */
import { pathToFileURL } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import {
  create,
  fromBinary,
  getOption,
  hasOption,
  toBinary,
  type DescMessage,
  type DescService,
  type FileRegistry,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, type FileDescriptorProto } from '@bufbuild/protobuf/wkt';
import { api_service_name } from '../generated/proto/cloud/annotations_pb.js';
import { OperationService } from '../generated/proto/cloud/common/v1/operation_service_pb.js';
import { ProjectService } from '../generated/proto/cloud/iam/v1/project_service_pb.js';
import * as reflectionV1 from '../generated/proto/grpc/reflection/v1/reflection_pb.js';
import * as reflectionV1alpha from '../generated/proto/grpc/reflection/v1alpha/reflection_pb.js';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { cloudJsonRegistry } from '../src/handlers/cloud/json-registry.js';
import { ConnectTestClient, GrpcCallError, GrpcTestClient, expectGrpcError, type RpcTestClient } from '../test/support/grpc.js';
import { errorProblems, responseProblems } from '../test/contract/grpc-checks.js';
import { NO_ERROR_CASES, RPC_CASES, type ReflectionRequest, type RpcContext } from '../test/contract/grpc-cases.js';
import { startLiveServer } from './contract-server.js';
import { reflectedRegistry } from './support/reflected-registry.js';

const ADMIN = { name: 'grpc-client-contract-admin', password: 'grpc-client-contract-password' };
const READER = { name: 'grpc-client-contract-reader', password: 'grpc-client-contract-reader-pw' };

/** Services whose errors are not cloud errors (no ServiceError detail promised). */
const SERVICE_ERROR_EXEMPT = new Set([
  'cloud.common.v1.ServerInfoService',
  'grpc.health.v1.Health',
  'grpc.reflection.v1.ServerReflection',
  'grpc.reflection.v1alpha.ServerReflection',
]);

export interface GrpcClientOutcome {
  contract: string;
  ok: boolean;
  lines: string[];
  /** RPCs the server serves, and those with a passing success case and (unless exempt) a passing error case. */
  rpcs: number;
  exercised: number;
}

/** A bidirectional-streaming call with grpc-js: writes every request, then collects every response. */
function streamCall<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  path: string,
  input: I,
  output: O,
  requests: Array<MessageInitShape<I>>,
): Promise<Array<MessageShape<O>>> {
  return new Promise((resolve, reject) => {
    const call = client.makeBidiStreamRequest(
      path,
      (value: MessageShape<I>) => Buffer.from(toBinary(input, value)),
      (buffer: Buffer) => fromBinary(output, buffer),
      new grpc.Metadata(),
    );
    const responses: Array<MessageShape<O>> = [];
    call.on('data', (message: MessageShape<O>) => responses.push(message));
    call.on('error', reject);
    call.on('end', () => resolve(responses));
    for (const request of requests) call.write(create(input, request));
    call.end();
  });
}

/** Every service and file the server describes through reflection v1. */
async function discover(client: grpc.Client): Promise<{ services: DescService[]; registry: FileRegistry }> {
  const path = `/${reflectionV1.ServerReflection.typeName}/ServerReflectionInfo`;
  const call = (requests: ReflectionRequest[]) =>
    streamCall(client, path, reflectionV1.ServerReflectionRequestSchema, reflectionV1.ServerReflectionResponseSchema, requests);
  const [list] = await call([{ messageRequest: { case: 'listServices', value: '' } }]);
  if (list?.messageResponse.case !== 'listServicesResponse') throw new Error(`reflection list_services answered ${list?.messageResponse.case}`);
  const names = list.messageResponse.value.service.map((service) => service.name);
  const files = new Map<string, FileDescriptorProto>();
  const answers = await call(names.map((name) => ({ messageRequest: { case: 'fileContainingSymbol', value: name } })));
  for (const answer of answers) {
    if (answer.messageResponse.case !== 'fileDescriptorResponse') throw new Error(`reflection file_containing_symbol answered ${answer.messageResponse.case}`);
    for (const bytes of answer.messageResponse.value.fileDescriptorProto) {
      const file = fromBinary(FileDescriptorProtoSchema, bytes);
      files.set(file.name, file);
    }
  }
  const registry = reflectedRegistry(files);
  const services = names.map((name) => {
    const service = registry.getService(name);
    if (!service) throw new Error(`reflection lists ${name} but describes no such service`);
    return service;
  });
  return { services, registry };
}

async function signIn(url: string, account: { name: string; password: string }): Promise<string> {
  const response = await fetch(`${url}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(account) });
  if (response.status !== 200) throw new Error(`sign-in of ${account.name} answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { accessToken: string }).accessToken;
}

/** A protocol the cases run over: how to make its client for a server. */
interface Protocol {
  name: string;
  client(url: string): RpcTestClient;
}

/** JSON clients read the Any fields of an Operation through the same registry as the server. */
const jsonOptions = { registry: cloudJsonRegistry };

/**
 * Every case runs over each RPC protocol the server speaks: native gRPC through @grpc/grpc-js (the
 * fast path), and through connect-node's clients Connect JSON, Connect binary, gRPC-Web and gRPC with
 * JSON (both served by connect-node).
 */
const PROTOCOLS: Protocol[] = [
  { name: 'gRPC (grpc-js)', client: (url) => new GrpcTestClient(url) },
  {
    name: 'Connect JSON',
    client: (baseUrl) => new ConnectTestClient(createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false, jsonOptions })),
  },
  { name: 'Connect binary', client: (baseUrl) => new ConnectTestClient(createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: true })) },
  { name: 'gRPC-Web', client: (baseUrl) => new ConnectTestClient(createGrpcWebTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: true })) },
  { name: 'gRPC JSON (connect-node)', client: (baseUrl) => new ConnectTestClient(createGrpcTransport({ baseUrl, useBinaryFormat: false, jsonOptions })) },
];

/** Runs every case over every protocol (two servers at a time, each fresh); never throws for a failed check. */
export async function runGrpcClientContract(): Promise<GrpcClientOutcome> {
  const outcomes: ProtocolOutcome[] = [];
  const queue = [...PROTOCOLS];
  await Promise.all(
    [0, 1].map(async () => {
      for (let protocol = queue.shift(); protocol; protocol = queue.shift()) outcomes.push(await runOverProtocol(protocol));
    }),
  );
  outcomes.sort((a, b) => PROTOCOLS.findIndex((p) => p.name === a.protocol) - PROTOCOLS.findIndex((p) => p.name === b.protocol));
  // An RPC counts as exercised when it was exercised over every protocol.
  const rpcs = Math.max(0, ...outcomes.map((outcome) => outcome.rpcs));
  const exercised = [...(outcomes[0]?.exercised ?? [])].filter((key) => outcomes.every((outcome) => outcome.exercised.has(key))).length;
  const ok = outcomes.every((outcome) => outcome.ok);
  return {
    contract: `RPC (${PROTOCOLS.map((protocol) => protocol.name).join(', ')})`,
    ok,
    lines: [
      `${rpcs} RPCs served, ${exercised} exercised over all ${PROTOCOLS.length} protocols`,
      ...outcomes.flatMap((outcome) => outcome.lines.map((line, index) => (index === 0 ? `${outcome.protocol}: ${line}` : `  ${line}`))),
    ],
    rpcs,
    exercised,
  };
}

interface ProtocolOutcome {
  protocol: string;
  ok: boolean;
  lines: string[];
  rpcs: number;
  /** `/<Service>/<Method>` of the RPCs with a passing success case and (unless exempt) a passing error case. */
  exercised: Set<string>;
}

async function runOverProtocol(protocol: Protocol): Promise<ProtocolOutcome> {
  const failures: string[] = [];
  const info: string[] = [];
  let rpcs = 0;
  const exercised = new Set<string>();
  let passed = 0;
  let total = 0;
  const server = await startLiveServer('grpc_client_contract', {
    COMPUTE_WORK_MS: '300',
    OPERATION_POLL_MS: '50',
    QUOTA_INSTANCES_PER_PROJECT: '2',
    ADMIN_USERNAME: ADMIN.name,
    ADMIN_PASSWORD: ADMIN.password,
  });
  // grpc-js does what only gRPC can (reflection's bidi stream) and the fixtures; the cases run over `calls`.
  const client = new GrpcTestClient(server.url);
  const calls = protocol.client(server.url);
  try {
    console.log(`\n=== ${protocol.name}: every RPC against ${server.url}`);
    const admin = await signIn(server.url, ADMIN);
    const created = await fetch(`${server.url}/api/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
      body: JSON.stringify({ ...READER, isAdmin: false }),
    });
    if (created.status !== 200) throw new Error(`creating the reader answered ${created.status}`);
    const reader = await signIn(server.url, READER);
    const { services, registry } = await discover(client.client);
    const served = new Map<string, { service: DescService; method: DescService['methods'][number] }>(
      services.flatMap((service) => service.methods.map((method) => [`/${service.typeName}/${method.name}`, { service, method }] as const)),
    );
    rpcs = served.size;

    // Instances need real projects (IAM): one per name, made by the admin on first use.
    const projects = new Map<string, Promise<string>>();
    const projectNamed = (name: string): Promise<string> => {
      if (!projects.has(name))
        projects.set(
          name,
          client.call(ProjectService.method.create, { metadata: { name } }, { token: admin }).then(({ message }) => message.resourceId),
        );
      return projects.get(name) as Promise<string>;
    };
    const memos = new Map<string, Promise<unknown>>();
    const ctx: RpcContext = {
      grpc: calls,
      admin,
      reader,
      project: await projectNamed('grpccontract'),
      projectFor: (suffix) => projectNamed(`grpccontract-${suffix}`),
      memo: <T>(key: string, make: () => Promise<T>) => {
        if (!memos.has(key)) memos.set(key, make());
        return memos.get(key) as Promise<T>;
      },
      async waitDone(id) {
        const deadline = Date.now() + 20_000;
        for (;;) {
          const { message } = await client.call(OperationService.method.get, { id }, { token: admin });
          if (message.status) return message;
          if (Date.now() > deadline) throw new Error(`operation ${id} did not complete in 20 s`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      },
      reflect: ((version: 'v1' | 'v1alpha', requests: ReflectionRequest[]) =>
        version === 'v1'
          ? streamCall(
              client.client,
              `/${reflectionV1.ServerReflection.typeName}/ServerReflectionInfo`,
              reflectionV1.ServerReflectionRequestSchema,
              reflectionV1.ServerReflectionResponseSchema,
              requests,
            )
          : streamCall(
              client.client,
              `/${reflectionV1alpha.ServerReflection.typeName}/ServerReflectionInfo`,
              reflectionV1alpha.ServerReflectionRequestSchema,
              reflectionV1alpha.ServerReflectionResponseSchema,
              requests,
            )) as RpcContext['reflect'],
    };

    for (const key of Object.keys(RPC_CASES)) if (!served.has(key)) failures.push(`cases for ${key}, which the server does not serve`);
    const uncovered: string[] = [];
    for (const [key, { service, method }] of served) {
      const cases = RPC_CASES[key] ?? [];
      const apiServiceName = hasOption(service, api_service_name) ? getOption(service, api_service_name) : '';
      let success = false;
      let error = false;
      for (const testCase of cases) {
        total++;
        const label = `${key} ${testCase.want}: ${testCase.name}`;
        const problems: string[] = [];
        try {
          if (testCase.want === 'OK') {
            const { message } = await testCase.call(ctx);
            if (message.$typeName !== method.output.typeName) problems.push(`answered a ${message.$typeName}, the contract says ${method.output.typeName}`);
            problems.push(...responseProblems(method.output, message, registry));
            await testCase.check?.(message as never, ctx);
          } else {
            const failure = await expectGrpcError(testCase.call(ctx));
            problems.push(...errorProblems(failure, testCase.want, { serviceError: !SERVICE_ERROR_EXEMPT.has(service.typeName), apiServiceName }));
          }
        } catch (thrown) {
          problems.push(thrown instanceof GrpcCallError ? `failed with ${thrown.message}` : thrown instanceof Error ? thrown.message : String(thrown));
        }
        if (problems.length > 0) {
          failures.push(`failed: ${label}`, ...problems.map((problem) => `  - ${problem}`));
          continue;
        }
        passed++;
        if (testCase.want === 'OK' && !testCase.inBandError) success = true;
        else error = true;
      }
      const exemptFromErrors = key in NO_ERROR_CASES;
      if (success && (error || exemptFromErrors)) exercised.add(key);
      else
        uncovered.push(
          `${key} (${[success ? '' : 'no passing success case', error || exemptFromErrors ? '' : 'no passing error case'].filter(Boolean).join(', ')})`,
        );
    }
    if (uncovered.length > 0) failures.push('RPCs not exercised (add cases to test/contract/grpc-cases.ts):', ...uncovered.map((line) => `  - ${line}`));
    info.push(`${served.size} RPCs served (from reflection), ${exercised.size} exercised`);
  } catch (thrown) {
    failures.push(`crashed: ${thrown instanceof Error ? (thrown.stack ?? thrown.message) : String(thrown)}`);
  } finally {
    client.close();
    if (calls instanceof GrpcTestClient) calls.close();
    await server.close();
  }
  return {
    protocol: protocol.name,
    ok: failures.length === 0,
    lines: [`${total} cases: ${passed} passed, ${total - passed} failed; ${info.join('; ')}`, ...failures],
    rpcs,
    exercised,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const outcome = await runGrpcClientContract();
  console.log(`${outcome.ok ? 'PASS' : 'FAIL'} ${outcome.contract}: ${outcome.lines[0] ?? ''}`);
  for (const line of outcome.lines.slice(1)) console.log(`     ${line}`);
  process.exitCode = outcome.ok ? 0 : 1;
}
