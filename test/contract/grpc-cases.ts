/**
 * The gRPC contract cases, keyed by `/<package.Service>/<Method>`: for every RPC the server serves,
 * a success case and its documented error cases (docs/cloud-api.md, "Read error details"). scripts/grpc-client-contract.ts
 * runs them with @grpc/grpc-js and fails when the server serves an RPC that has no entry here.
 *
 * Each case's call returns the response (or must fail with `want`); the runner checks every response
 * generically (test/contract/grpc-checks.ts) and every error's ServiceError detail; `check` adds what
 * only this case knows. Cases run in table order; fixtures are made lazily through `ctx.memo`.
 */
import assert from 'node:assert/strict';
import type { Message } from '@bufbuild/protobuf';
import { OperationService } from '../../generated/proto/cloud/common/v1/operation_service_pb.js';
import type { Operation } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import { ServerInfoService } from '../../generated/proto/cloud/common/v1/server_info_service_pb.js';
import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { InstanceStatus_State as State, type Instance } from '../../generated/proto/cloud/compute/v1/instance_pb.js';
import { Health, HealthCheckResponse_ServingStatus as Serving } from '../../generated/proto/grpc/health/v1/health_pb.js';
import * as reflectionV1 from '../../generated/proto/grpc/reflection/v1/reflection_pb.js';
import * as reflectionV1alpha from '../../generated/proto/grpc/reflection/v1alpha/reflection_pb.js';
import type { RpcTestClient } from '../support/grpc.js';
import type { StatusName } from './grpc-checks.js';
import { IAM_RPC_CASES } from './grpc-cases-iam.js';
import { DISK_RPC_CASES } from './grpc-cases-disks.js';

export interface RpcContext {
  /** The client of the protocol the cases run over (grpc-js, or a connect-node transport). */
  grpc: RpcTestClient;
  /** Access tokens: an admin user (may do everything) and a plain user (may only read). */
  admin: string;
  reader: string;
  /** A project id to create resources under; `project(suffix)` gives another one. */
  project: string;
  projectFor(suffix: string): Promise<string>;
  /** Runs `make` once per key and shares its result between cases. */
  memo<T>(key: string, make: () => Promise<T>): Promise<T>;
  /** Polls OperationService.Get until the operation is done; checks it succeeded. */
  waitDone(operationId: string): Promise<Operation>;
  /** A bidirectional reflection call: sends `requests`, answers every response. */
  reflect<V extends 'v1' | 'v1alpha'>(
    version: V,
    requests: ReflectionRequest[],
  ): Promise<Array<V extends 'v1' ? reflectionV1.ServerReflectionResponse : reflectionV1alpha.ServerReflectionResponse>>;
}

export type ReflectionRequest = { host?: string; messageRequest: { case: 'listServices' | 'fileContainingSymbol' | 'fileByFilename'; value: string } };

export interface RpcCase {
  name: string;
  /** 'OK', or the gRPC status the call must fail with. */
  want: 'OK' | StatusName;
  /** A documented error answered in-band by a successful call (reflection's `error_response`). */
  inBandError?: boolean;
  call(ctx: RpcContext): Promise<{ message: Message }>;
  check?(message: never, ctx: RpcContext): Promise<void> | void;
}

/** RPCs that document no error a client can provoke, and why. */
export const NO_ERROR_CASES: Record<string, string> = {
  '/cloud.common.v1.ServerInfoService/GetServerInfo': 'public, takes no input and reads nothing from the store',
};

/** A case with a typed `check` over the response message it returns. */
function ok<M extends Message>(
  name: string,
  call: (ctx: RpcContext) => Promise<{ message: M }>,
  check?: (message: M, ctx: RpcContext) => Promise<void> | void,
): RpcCase {
  return { name, want: 'OK', call, check: check as RpcCase['check'] };
}

function fails(want: StatusName, name: string, call: (ctx: RpcContext) => Promise<{ message: Message }>): RpcCase {
  return { name, want, call };
}

const I = InstanceService.method;
const O = OperationService.method;
const NONE = { token: undefined };

/** A running instance in its own project (so quota and list checks do not interfere). */
async function runningInstance(ctx: RpcContext, name: string): Promise<Instance> {
  const parentId = await ctx.projectFor(name);
  const { message: operation } = await ctx.grpc.call(
    I.create,
    { metadata: { parentId, name }, spec: { description: `contract ${name}` } },
    { token: ctx.admin },
  );
  await ctx.waitDone(operation.id);
  const { message } = await ctx.grpc.call(I.get, { id: operation.resourceId }, { token: ctx.admin });
  return message;
}

const fixture = (ctx: RpcContext) => ctx.memo('instance', () => runningInstance(ctx, 'vm-fixture'));
const fixtureId = async (ctx: RpcContext) => (await fixture(ctx)).metadata?.id ?? '';

/** A mutation answers a running Operation that then completes with OK. */
function runningOperation(resourceId?: (ctx: RpcContext) => Promise<string>) {
  return async (operation: Operation, ctx: RpcContext) => {
    assert.equal(operation.status, undefined, 'a compute mutation answers a still running Operation');
    if (resourceId) assert.equal(operation.resourceId, await resourceId(ctx));
    const done = await ctx.waitDone(operation.id);
    assert.equal(done.status?.code, 0, `operation ${operation.id} failed: ${done.status?.message}`);
  };
}

async function withState(ctx: RpcContext, name: string, state: 'stopped' | 'running'): Promise<string> {
  const instance = await runningInstance(ctx, name);
  const id = instance.metadata?.id ?? '';
  if (state === 'stopped') await ctx.waitDone((await ctx.grpc.call(I.stop, { id }, { token: ctx.admin })).message.id);
  return id;
}

function reflectionCases(version: 'v1' | 'v1alpha'): RpcCase[] {
  return [
    ok(
      `${version}: list_services names every cloud service`,
      (ctx) => ctx.reflect(version, [{ messageRequest: { case: 'listServices', value: '' } }]).then((responses) => ({ message: responses[0] as Message })),
      (message: Message) => {
        const response = message as reflectionV1.ServerReflectionResponse;
        assert.equal(response.messageResponse.case, 'listServicesResponse');
        const names = response.messageResponse.case === 'listServicesResponse' ? response.messageResponse.value.service.map((service) => service.name) : [];
        for (const name of [InstanceService.typeName, OperationService.typeName, ServerInfoService.typeName])
          assert.ok(names.includes(name), `${name} is listed`);
      },
    ),
    ok(
      `${version}: file_containing_symbol answers the file and its dependencies`,
      (ctx) =>
        ctx
          .reflect(version, [{ messageRequest: { case: 'fileContainingSymbol', value: InstanceService.typeName } }])
          .then((responses) => ({ message: responses[0] as Message })),
      (message: Message) => {
        const response = message as reflectionV1.ServerReflectionResponse;
        assert.equal(response.messageResponse.case, 'fileDescriptorResponse');
        assert.ok(response.messageResponse.case === 'fileDescriptorResponse' && response.messageResponse.value.fileDescriptorProto.length > 1);
      },
    ),
    {
      ...ok(
        `${version}: an unknown symbol answers an in-band NOT_FOUND error_response`,
        (ctx) =>
          ctx
            .reflect(version, [{ messageRequest: { case: 'fileContainingSymbol', value: 'no.such.Service' } }])
            .then((responses) => ({ message: responses[0] as Message })),
        (message: Message) => {
          const response = message as reflectionV1.ServerReflectionResponse;
          assert.equal(response.messageResponse.case, 'errorResponse');
          assert.equal(response.messageResponse.case === 'errorResponse' && response.messageResponse.value.errorCode, 5);
        },
      ),
      inBandError: true,
    },
  ];
}

export const RPC_CASES: Record<string, RpcCase[]> = {
  '/cloud.common.v1.ServerInfoService/GetServerInfo': [
    ok(
      'anyone reads the server name and version',
      (ctx) => ctx.grpc.call(ServerInfoService.method.getServerInfo, {}, NONE),
      (message) => {
        assert.ok(message.name !== '' && /^\d+\.\d+\.\d+/.test(message.version), JSON.stringify(message));
      },
    ),
  ],
  '/grpc.reflection.v1.ServerReflection/ServerReflectionInfo': reflectionCases('v1'),
  '/grpc.health.v1.Health/Check': [
    ok(
      'the whole server (empty service name) is SERVING, without a token',
      (ctx) => ctx.grpc.call(Health.method.check, { service: '' }, NONE),
      (message) => {
        assert.equal(message.status, Serving.SERVING);
      },
    ),
    ok(
      'a served service has the server status',
      (ctx) => ctx.grpc.call(Health.method.check, { service: InstanceService.typeName }, NONE),
      (message) => {
        assert.equal(message.status, Serving.SERVING);
      },
    ),
    fails('NOT_FOUND', 'a service this server does not serve is NOT_FOUND', (ctx) =>
      ctx.grpc.call(Health.method.check, { service: 'no.such.v1.Service' }, NONE),
    ),
  ],
  '/grpc.health.v1.Health/Watch': [
    ok(
      'the first message is the current status',
      (ctx) => ctx.grpc.first(Health.method.watch, { service: '' }, NONE),
      (message) => {
        assert.equal(message.status, Serving.SERVING);
      },
    ),
    {
      ...ok(
        'an unknown service answers SERVICE_UNKNOWN in-band (the stream stays open)',
        (ctx) => ctx.grpc.first(Health.method.watch, { service: 'no.such.v1.Service' }, NONE),
        (message) => {
          assert.equal(message.status, Serving.SERVICE_UNKNOWN);
        },
      ),
      inBandError: true,
    },
  ],
  '/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo': reflectionCases('v1alpha'),

  '/cloud.common.v1.OperationService/Get': [
    ok(
      'reads a completed operation',
      async (ctx) => {
        const instance = await fixture(ctx);
        const { message } = await ctx.grpc.call(O.list, { resourceId: instance.metadata?.id ?? '' }, { token: ctx.admin });
        return ctx.grpc.call(O.get, { id: message.operations[0]?.id ?? '' }, { token: ctx.reader });
      },
      (operation) => assert.equal(operation.status?.code, 0),
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(O.get, { id: 'operation-0000000000' }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'an empty id', (ctx) => ctx.grpc.call(O.get, {}, { token: ctx.admin })),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(O.get, { id: 'operation-0000000000' }, NONE)),
  ],
  '/cloud.common.v1.OperationService/List': [
    ok(
      'lists the operations of a resource, newest first',
      async (ctx) => ctx.grpc.call(O.list, { resourceId: await fixtureId(ctx) }, { token: ctx.admin }),
      (page) => {
        assert.ok(page.operations.length >= 1);
      },
    ),
    fails('INVALID_ARGUMENT', 'no resource_id', (ctx) => ctx.grpc.call(O.list, {}, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'a garbage page token', async (ctx) =>
      ctx.grpc.call(O.list, { resourceId: await fixtureId(ctx), pageToken: 'garbage' }, { token: ctx.admin }),
    ),
    fails('UNAUTHENTICATED', 'an invalid token', (ctx) => ctx.grpc.call(O.list, { resourceId: 'instance-x' }, { token: 'not-a-token' })),
  ],

  '/cloud.common.v1.OperationService/Cancel': [
    ok(
      'cancels a running Stop: the operation completes CANCELLED and the instance is RUNNING again',
      async (ctx) => {
        // The Cancel must land while the Stop runs; on a loaded machine the Stop may finish first
        // (FAILED_PRECONDITION), so the race is tried again on a fresh instance.
        for (let attempt = 0; ; attempt++) {
          const id = await withState(ctx, `vm-cancel-${attempt}`, 'running');
          const stop = await ctx.grpc.call(I.stop, { id }, { token: ctx.admin });
          try {
            return await ctx.grpc.call(O.cancel, { id: stop.message.id }, { token: ctx.admin });
          } catch (error) {
            if (attempt >= 2) throw error;
          }
        }
      },
      async (operation, ctx) => {
        assert.equal(operation.status?.code, 1, `CANCELLED, got ${operation.status?.code}: ${operation.status?.message}`);
        const { message } = await ctx.grpc.call(I.get, { id: operation.resourceId }, { token: ctx.admin });
        assert.equal(message.status?.state, State.RUNNING);
        // Cancelling again answers the same operation.
        const again = await ctx.grpc.call(O.cancel, { id: operation.id }, { token: ctx.admin });
        assert.equal(again.message.status?.code, 1);
      },
    ),
    fails('FAILED_PRECONDITION', 'an operation that already finished', async (ctx) => {
      const instance = await fixture(ctx);
      const { message } = await ctx.grpc.call(O.list, { resourceId: instance.metadata?.id ?? '' }, { token: ctx.admin });
      return ctx.grpc.call(O.cancel, { id: message.operations.at(-1)?.id ?? '' }, { token: ctx.admin });
    }),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(O.cancel, { id: 'operation-0000000000' }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'an empty id', (ctx) => ctx.grpc.call(O.cancel, {}, { token: ctx.admin })),
    fails('PERMISSION_DENIED', 'a plain user (as for the mutation)', async (ctx) => {
      const instance = await fixture(ctx);
      const { message } = await ctx.grpc.call(O.list, { resourceId: instance.metadata?.id ?? '' }, { token: ctx.admin });
      return ctx.grpc.call(O.cancel, { id: message.operations[0]?.id ?? '' }, { token: ctx.reader });
    }),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(O.cancel, { id: 'operation-0000000000' }, NONE)),
  ],
  '/cloud.common.v1.OperationService/Wait': [
    ok(
      'answers a running operation once it completed',
      async (ctx) => {
        const parentId = await ctx.projectFor('wait');
        const created = await ctx.grpc.call(I.create, { metadata: { parentId, name: 'vm-wait' } }, { token: ctx.admin });
        return ctx.grpc.call(O.wait, { id: created.message.id, timeout: { seconds: 20n } }, { token: ctx.reader });
      },
      (operation) => assert.equal(operation.status?.code, 0, `completed OK, got ${JSON.stringify(operation.status)}`),
    ),
    fails('INVALID_ARGUMENT', 'a negative timeout', async (ctx) =>
      ctx.grpc.call(O.wait, { id: 'operation-0000000000', timeout: { seconds: -1n } }, { token: ctx.admin }),
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(O.wait, { id: 'operation-0000000000' }, { token: ctx.admin })),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(O.wait, { id: 'operation-0000000000' }, NONE)),
  ],

  '/cloud.compute.v1.InstanceService/Get': [
    ok(
      'a reader reads a running instance',
      async (ctx) => ctx.grpc.call(I.get, { id: await fixtureId(ctx) }, { token: ctx.reader }),
      (instance) => {
        assert.equal(instance.status?.state, State.RUNNING);
      },
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(I.get, { id: 'instance-0000000000' }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'an empty id', (ctx) => ctx.grpc.call(I.get, {}, { token: ctx.admin })),
    fails('UNAUTHENTICATED', 'no token', async (ctx) => ctx.grpc.call(I.get, { id: await fixtureId(ctx) }, NONE)),
  ],
  '/cloud.compute.v1.InstanceService/GetByName': [
    ok(
      'reads an instance by parent and name',
      async (ctx) => {
        const instance = await fixture(ctx);
        return ctx.grpc.call(I.getByName, { parentId: instance.metadata?.parentId ?? '', name: instance.metadata?.name ?? '' }, { token: ctx.reader });
      },
      async (instance, ctx) => assert.equal(instance.metadata?.id, await fixtureId(ctx)),
    ),
    fails('NOT_FOUND', 'an unknown name', (ctx) => ctx.grpc.call(I.getByName, { parentId: ctx.project, name: 'no-such-vm' }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'no parent_id and no name', (ctx) => ctx.grpc.call(I.getByName, {}, { token: ctx.admin })),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(I.getByName, { parentId: ctx.project, name: 'x' }, NONE)),
  ],
  '/cloud.compute.v1.InstanceService/List': [
    ok(
      'lists the instances of a project',
      async (ctx) => {
        const instance = await fixture(ctx);
        return ctx.grpc.call(I.list, { parentId: instance.metadata?.parentId ?? '' }, { token: ctx.reader });
      },
      async (page, ctx) =>
        assert.deepEqual(
          page.items.map((item) => item.metadata?.id),
          [await fixtureId(ctx)],
        ),
    ),
    fails('INVALID_ARGUMENT', 'a negative page size', (ctx) => ctx.grpc.call(I.list, { parentId: ctx.project, pageSize: -1n }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'no parent_id', (ctx) => ctx.grpc.call(I.list, {}, { token: ctx.admin })),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(I.list, { parentId: ctx.project }, NONE)),
  ],
  '/cloud.compute.v1.InstanceService/Create': [
    ok(
      'answers a running Operation that creates a RUNNING instance',
      async (ctx) => {
        const parentId = await ctx.projectFor('create');
        return ctx.grpc.call(
          I.create,
          { metadata: { parentId, name: 'vm-created' }, spec: { cloudInitUserData: '#cloud-config secret' } },
          { token: ctx.admin, headers: { 'x-idempotency-key': 'grpc-contract-create-0001' } },
        );
      },
      async (operation, ctx) => {
        await runningOperation()(operation, ctx);
        // The same key and request again: a replay of the same Operation, a valid answer of the protocol.
        const parentId = await ctx.projectFor('create');
        const replay = await ctx.grpc.call(
          I.create,
          { metadata: { parentId, name: 'vm-created' }, spec: { cloudInitUserData: '#cloud-config secret' } },
          { token: ctx.admin, headers: { 'x-idempotency-key': 'grpc-contract-create-0001' } },
        );
        assert.equal(replay.message.id, operation.id);
        assert.equal(replay.headers.get('x-idempotent-replay')[0], 'true');
        const { message } = await ctx.grpc.call(I.get, { id: operation.resourceId }, { token: ctx.admin });
        assert.equal(message.status?.state, State.RUNNING);
      },
    ),
    fails('INVALID_ARGUMENT', 'no metadata.name', (ctx) => ctx.grpc.call(I.create, { metadata: { parentId: ctx.project } }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'a malformed idempotency key', (ctx) =>
      ctx.grpc.call(I.create, { metadata: { parentId: ctx.project, name: 'k' } }, { token: ctx.admin, headers: { 'x-idempotency-key': 'short' } }),
    ),
    fails('ALREADY_EXISTS', 'a duplicate name under one parent', async (ctx) => {
      const instance = await fixture(ctx);
      return ctx.grpc.call(I.create, { metadata: { parentId: instance.metadata?.parentId ?? '', name: instance.metadata?.name ?? '' } }, { token: ctx.admin });
    }),
    fails('RESOURCE_EXHAUSTED', 'over the instances-per-project quota', async (ctx) => {
      const parentId = await ctx.projectFor('quota');
      for (const name of ['q-1', 'q-2']) await ctx.grpc.call(I.create, { metadata: { parentId, name } }, { token: ctx.admin });
      return ctx.grpc.call(I.create, { metadata: { parentId, name: 'q-3' } }, { token: ctx.admin });
    }),
    fails('PERMISSION_DENIED', 'a plain user', (ctx) =>
      ctx.grpc.call(I.create, { metadata: { parentId: ctx.project, name: 'denied' } }, { token: ctx.reader }),
    ),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(I.create, { metadata: { parentId: ctx.project, name: 'anonymous' } }, NONE)),
  ],
  '/cloud.compute.v1.InstanceService/Update': [
    ok(
      'replaces the spec with a reset mask recorded in canonical form',
      async (ctx) => {
        return ctx.grpc.call(
          I.update,
          { metadata: { id: await withState(ctx, 'vm-update', 'running') }, spec: {} },
          { token: ctx.admin, headers: { 'x-resetmask': 'spec . description' } },
        );
      },
      async (operation, ctx) => {
        assert.deepEqual(operation.requestHeaders['x-resetmask']?.values, ['spec.description'], JSON.stringify(operation.requestHeaders));
        await runningOperation()(operation, ctx);
        const { message } = await ctx.grpc.call(I.get, { id: operation.resourceId }, { token: ctx.admin });
        assert.equal(message.spec?.description, '');
      },
    ),
    fails('INVALID_ARGUMENT', 'a malformed reset mask', async (ctx) =>
      ctx.grpc.call(I.update, { metadata: { id: await fixtureId(ctx) } }, { token: ctx.admin, headers: { 'x-resetmask': 'spec.(' } }),
    ),
    fails('INVALID_ARGUMENT', 'a changed IMMUTABLE field', async (ctx) =>
      ctx.grpc.call(I.update, { metadata: { id: await fixtureId(ctx) }, spec: { imageFamily: 'other' } }, { token: ctx.admin }),
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(I.update, { metadata: { id: 'instance-0000000000' } }, { token: ctx.admin })),
    fails('ABORTED', 'a stale resource_version', async (ctx) =>
      ctx.grpc.call(I.update, { metadata: { id: await fixtureId(ctx), resourceVersion: 999n } }, { token: ctx.admin }),
    ),
    fails('PERMISSION_DENIED', 'a plain user', async (ctx) => ctx.grpc.call(I.update, { metadata: { id: await fixtureId(ctx) } }, { token: ctx.reader })),
    fails('UNAUTHENTICATED', 'no token', async (ctx) => ctx.grpc.call(I.update, { metadata: { id: await fixtureId(ctx) } }, NONE)),
  ],
  '/cloud.compute.v1.InstanceService/Delete': [
    ok(
      'deletes an instance',
      async (ctx) => ctx.grpc.call(I.delete, { id: await withState(ctx, 'vm-delete', 'running') }, { token: ctx.admin }),
      async (operation, ctx) => {
        await runningOperation()(operation, ctx);
        await assert.rejects(ctx.grpc.call(I.get, { id: operation.resourceId }, { token: ctx.admin }), /NOT_FOUND/);
      },
    ),
    fails('ABORTED', 'while another operation runs on the instance', async (ctx) => {
      // The Delete must land while the Stop still runs; on a loaded machine the Stop may finish
      // first, so a Delete that went through is waited for and the race tried again.
      let last: { message: Message } | undefined;
      for (let attempt = 0; attempt < 3; attempt++) {
        const id = await withState(ctx, `vm-busy-${attempt}`, 'running');
        const stop = await ctx.grpc.call(I.stop, { id }, { token: ctx.admin });
        try {
          last = await ctx.grpc.call(I.delete, { id }, { token: ctx.admin });
        } finally {
          await ctx.waitDone(stop.message.id);
        }
        await ctx.waitDone((last.message as Operation).id);
      }
      return last as { message: Message };
    }),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(I.delete, { id: 'instance-0000000000' }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'an empty id', (ctx) => ctx.grpc.call(I.delete, {}, { token: ctx.admin })),
    fails('PERMISSION_DENIED', 'a plain user', async (ctx) => ctx.grpc.call(I.delete, { id: await fixtureId(ctx) }, { token: ctx.reader })),
    fails('UNAUTHENTICATED', 'no token', async (ctx) => ctx.grpc.call(I.delete, { id: await fixtureId(ctx) }, NONE)),
  ],
  '/cloud.compute.v1.InstanceService/Start': [
    ok(
      'starts a stopped instance',
      async (ctx) => ctx.grpc.call(I.start, { id: await withState(ctx, 'vm-start', 'stopped') }, { token: ctx.admin }),
      async (operation, ctx) => {
        await runningOperation()(operation, ctx);
        const { message } = await ctx.grpc.call(I.get, { id: operation.resourceId }, { token: ctx.admin });
        assert.equal(message.status?.state, State.RUNNING);
      },
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(I.start, { id: 'instance-0000000000' }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'an empty id', (ctx) => ctx.grpc.call(I.start, {}, { token: ctx.admin })),
    fails('PERMISSION_DENIED', 'a plain user', async (ctx) => ctx.grpc.call(I.start, { id: await fixtureId(ctx) }, { token: ctx.reader })),
    fails('UNAUTHENTICATED', 'no token', async (ctx) => ctx.grpc.call(I.start, { id: await fixtureId(ctx) }, NONE)),
  ],
  '/cloud.compute.v1.InstanceService/Stop': [
    ok(
      'stops a running instance',
      async (ctx) => ctx.grpc.call(I.stop, { id: await withState(ctx, 'vm-stop', 'running') }, { token: ctx.admin }),
      async (operation, ctx) => {
        await runningOperation()(operation, ctx);
        const { message } = await ctx.grpc.call(I.get, { id: operation.resourceId }, { token: ctx.admin });
        assert.equal(message.status?.state, State.STOPPED);
      },
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(I.stop, { id: 'instance-0000000000' }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'an empty id', (ctx) => ctx.grpc.call(I.stop, {}, { token: ctx.admin })),
    fails('PERMISSION_DENIED', 'a plain user', async (ctx) => ctx.grpc.call(I.stop, { id: await fixtureId(ctx) }, { token: ctx.reader })),
    fails('UNAUTHENTICATED', 'no token', async (ctx) => ctx.grpc.call(I.stop, { id: await fixtureId(ctx) }, NONE)),
  ],
  '/cloud.compute.v1.InstanceService/ListOperationsByParent': [
    ok(
      'lists the operations of a project',
      async (ctx) => {
        const instance = await fixture(ctx);
        return ctx.grpc.call(I.listOperationsByParent, { parentId: instance.metadata?.parentId ?? '' }, { token: ctx.reader });
      },
      async (page, ctx) => {
        const id = await fixtureId(ctx);
        assert.ok(page.operations.length >= 1 && page.operations.every((operation) => operation.resourceId === id), "only the project's instance operations");
      },
    ),
    fails('INVALID_ARGUMENT', 'no parent_id', (ctx) => ctx.grpc.call(I.listOperationsByParent, {}, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'a negative page size', (ctx) =>
      ctx.grpc.call(I.listOperationsByParent, { parentId: ctx.project, pageSize: -5n }, { token: ctx.admin }),
    ),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(I.listOperationsByParent, { parentId: ctx.project }, NONE)),
  ],
  ...DISK_RPC_CASES,
  ...IAM_RPC_CASES,
};
