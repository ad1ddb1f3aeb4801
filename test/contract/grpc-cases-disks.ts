/**
 * The gRPC contract cases of compute DiskService (docs/cloud-api.md, "Disks"), merged into RPC_CASES
 * (test/contract/grpc-cases.ts): a success case and the documented errors of every RPC, the
 * attachment rules among them.
 */
import assert from 'node:assert/strict';
import type { Message } from '@bufbuild/protobuf';
import type { Operation } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import { DiskStatus_State as State, type Disk } from '../../generated/proto/cloud/compute/v1/disk_pb.js';
import { DiskService } from '../../generated/proto/cloud/compute/v1/disk_service_pb.js';
import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import type { RpcCase, RpcContext } from './grpc-cases.js';
import type { StatusName } from './grpc-checks.js';

const D = DiskService.method;
const NONE = { token: undefined };
const GIB = 1n << 30n;

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

/** A READY disk in its own project. */
async function readyDisk(ctx: RpcContext, name: string): Promise<Disk> {
  const parentId = await ctx.projectFor(`disk-${name}`);
  const { message: operation } = await ctx.grpc.call(D.create, { metadata: { parentId, name }, spec: { sizeBytes: GIB } }, { token: ctx.admin });
  await ctx.waitDone(operation.id);
  return (await ctx.grpc.call(D.get, { id: operation.resourceId }, { token: ctx.admin })).message;
}

const fixture = (ctx: RpcContext) => ctx.memo('disk', () => readyDisk(ctx, 'disk-fixture'));
const fixtureId = async (ctx: RpcContext) => (await fixture(ctx)).metadata?.id ?? '';

/** A disk attached read-write to a new instance of its project. */
async function attachedDisk(ctx: RpcContext, name: string): Promise<{ disk: string; instance: string; parentId: string }> {
  const disk = await readyDisk(ctx, name);
  const parentId = disk.metadata?.parentId ?? '';
  const { message: operation } = await ctx.grpc.call(
    InstanceService.method.create,
    { metadata: { parentId, name: `${name}-vm` }, spec: { bootDisk: { diskId: disk.metadata?.id ?? '' } } },
    { token: ctx.admin },
  );
  await ctx.waitDone(operation.id);
  return { disk: disk.metadata?.id ?? '', instance: operation.resourceId, parentId };
}

/** A mutation answers a running Operation that then completes with OK. */
async function completes(operation: Operation, ctx: RpcContext): Promise<void> {
  assert.equal(operation.status, undefined, 'a compute mutation answers a still running Operation');
  const done = await ctx.waitDone(operation.id);
  assert.equal(done.status?.code, 0, `operation ${operation.id} failed: ${done.status?.message}`);
}

export const DISK_RPC_CASES: Record<string, RpcCase[]> = {
  '/cloud.compute.v1.DiskService/Get': [
    ok(
      'a reader reads a READY disk',
      async (ctx) => ctx.grpc.call(D.get, { id: await fixtureId(ctx) }, { token: ctx.reader }),
      (disk) => {
        assert.equal(disk.status?.state, State.READY);
        assert.equal(disk.status?.sizeBytes, GIB);
        assert.equal(disk.status?.blockSizeBytes, 4096n);
      },
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(D.get, { id: 'disk-00000000000000000000' }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'an empty id', (ctx) => ctx.grpc.call(D.get, {}, { token: ctx.admin })),
    fails('UNAUTHENTICATED', 'no token', async (ctx) => ctx.grpc.call(D.get, { id: await fixtureId(ctx) }, NONE)),
  ],
  '/cloud.compute.v1.DiskService/GetByName': [
    ok(
      'reads a disk by parent and name',
      async (ctx) => {
        const disk = await fixture(ctx);
        return ctx.grpc.call(D.getByName, { parentId: disk.metadata?.parentId ?? '', name: disk.metadata?.name ?? '' }, { token: ctx.reader });
      },
      async (disk, ctx) => assert.equal(disk.metadata?.id, await fixtureId(ctx)),
    ),
    fails('NOT_FOUND', 'an unknown name', (ctx) => ctx.grpc.call(D.getByName, { parentId: ctx.project, name: 'no-such-disk' }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'no parent_id and no name', (ctx) => ctx.grpc.call(D.getByName, {}, { token: ctx.admin })),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(D.getByName, { parentId: ctx.project, name: 'x' }, NONE)),
  ],
  '/cloud.compute.v1.DiskService/List': [
    ok(
      'lists the disks of a project',
      async (ctx) => {
        const disk = await fixture(ctx);
        return ctx.grpc.call(D.list, { parentId: disk.metadata?.parentId ?? '' }, { token: ctx.reader });
      },
      async (page, ctx) =>
        assert.deepEqual(
          page.items.map((item) => item.metadata?.id),
          [await fixtureId(ctx)],
        ),
    ),
    fails('INVALID_ARGUMENT', 'no parent_id', (ctx) => ctx.grpc.call(D.list, {}, { token: ctx.admin })),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(D.list, { parentId: ctx.project }, NONE)),
  ],
  '/cloud.compute.v1.DiskService/Create': [
    ok(
      'answers a running Operation that creates a READY disk',
      async (ctx) => {
        const parentId = await ctx.projectFor('disk-create');
        return ctx.grpc.call(
          D.create,
          { metadata: { parentId, name: 'disk-created' }, spec: { sizeBytes: 2n * GIB, blockSizeBytes: 8192n, sourceImageFamily: { imageFamily: 'ubuntu' } } },
          { token: ctx.admin },
        );
      },
      async (operation, ctx) => {
        await completes(operation, ctx);
        const { message } = await ctx.grpc.call(D.get, { id: operation.resourceId }, { token: ctx.admin });
        assert.equal(message.status?.state, State.READY);
        assert.equal(message.status?.blockSizeBytes, 8192n);
      },
    ),
    fails('INVALID_ARGUMENT', 'no size', (ctx) => ctx.grpc.call(D.create, { metadata: { parentId: ctx.project, name: 'sizeless' } }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'a block size that is no power of two', (ctx) =>
      ctx.grpc.call(D.create, { metadata: { parentId: ctx.project, name: 'odd' }, spec: { sizeBytes: GIB, blockSizeBytes: 5000n } }, { token: ctx.admin }),
    ),
    fails('ALREADY_EXISTS', 'a duplicate name under one parent', async (ctx) => {
      const disk = await fixture(ctx);
      return ctx.grpc.call(
        D.create,
        { metadata: { parentId: disk.metadata?.parentId ?? '', name: disk.metadata?.name ?? '' }, spec: { sizeBytes: GIB } },
        { token: ctx.admin },
      );
    }),
    fails('PERMISSION_DENIED', 'a plain user', (ctx) =>
      ctx.grpc.call(D.create, { metadata: { parentId: ctx.project, name: 'denied' }, spec: { sizeBytes: GIB } }, { token: ctx.reader }),
    ),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(D.create, { metadata: { parentId: ctx.project, name: 'anonymous' } }, NONE)),
  ],
  '/cloud.compute.v1.DiskService/Update': [
    ok(
      'grows the disk; the reset mask is recorded in canonical form',
      async (ctx) => {
        const disk = await readyDisk(ctx, 'disk-update');
        return ctx.grpc.call(
          D.update,
          { metadata: { id: disk.metadata?.id ?? '' }, spec: { sizeBytes: 3n * GIB } },
          { token: ctx.admin, headers: { 'x-resetmask': 'spec . source_image_family' } },
        );
      },
      async (operation, ctx) => {
        assert.deepEqual(operation.requestHeaders['x-resetmask']?.values, ['spec.source_image_family'], JSON.stringify(operation.requestHeaders));
        await completes(operation, ctx);
        const { message } = await ctx.grpc.call(D.get, { id: operation.resourceId }, { token: ctx.admin });
        assert.equal(message.status?.sizeBytes, 3n * GIB);
      },
    ),
    fails('INVALID_ARGUMENT', 'a changed IMMUTABLE block size', async (ctx) =>
      ctx.grpc.call(D.update, { metadata: { id: await fixtureId(ctx) }, spec: { sizeBytes: GIB, blockSizeBytes: 8192n } }, { token: ctx.admin }),
    ),
    fails('INVALID_ARGUMENT', 'a smaller size', async (ctx) =>
      ctx.grpc.call(D.update, { metadata: { id: await fixtureId(ctx) }, spec: { sizeBytes: GIB / 2n } }, { token: ctx.admin }),
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(D.update, { metadata: { id: 'disk-00000000000000000000' } }, { token: ctx.admin })),
    fails('ABORTED', 'a stale resource_version', async (ctx) =>
      ctx.grpc.call(D.update, { metadata: { id: await fixtureId(ctx), resourceVersion: 999n } }, { token: ctx.admin }),
    ),
    fails('PERMISSION_DENIED', 'a plain user', async (ctx) => ctx.grpc.call(D.update, { metadata: { id: await fixtureId(ctx) } }, { token: ctx.reader })),
    fails('UNAUTHENTICATED', 'no token', async (ctx) => ctx.grpc.call(D.update, { metadata: { id: await fixtureId(ctx) } }, NONE)),
  ],
  '/cloud.compute.v1.DiskService/Delete': [
    ok(
      'deletes a disk no instance attaches',
      async (ctx) => ctx.grpc.call(D.delete, { id: (await readyDisk(ctx, 'disk-delete')).metadata?.id ?? '' }, { token: ctx.admin }),
      async (operation, ctx) => {
        await completes(operation, ctx);
        await assert.rejects(ctx.grpc.call(D.get, { id: operation.resourceId }, { token: ctx.admin }), /NOT_FOUND/);
      },
    ),
    fails('FAILED_PRECONDITION', 'a disk attached to an instance', async (ctx) =>
      ctx.grpc.call(D.delete, { id: (await attachedDisk(ctx, 'disk-held')).disk }, { token: ctx.admin }),
    ),
    fails('NOT_FOUND', 'an unknown id', (ctx) => ctx.grpc.call(D.delete, { id: 'disk-00000000000000000000' }, { token: ctx.admin })),
    fails('INVALID_ARGUMENT', 'an empty id', (ctx) => ctx.grpc.call(D.delete, {}, { token: ctx.admin })),
    fails('PERMISSION_DENIED', 'a plain user', async (ctx) => ctx.grpc.call(D.delete, { id: await fixtureId(ctx) }, { token: ctx.reader })),
    fails('UNAUTHENTICATED', 'no token', async (ctx) => ctx.grpc.call(D.delete, { id: await fixtureId(ctx) }, NONE)),
  ],
  '/cloud.compute.v1.DiskService/ListOperationsByParent': [
    ok(
      'lists the compute operations of a project',
      async (ctx) => {
        const disk = await fixture(ctx);
        return ctx.grpc.call(D.listOperationsByParent, { parentId: disk.metadata?.parentId ?? '' }, { token: ctx.reader });
      },
      async (page, ctx) => {
        const id = await fixtureId(ctx);
        assert.ok(page.operations.length >= 1 && page.operations.every((operation) => operation.resourceId === id), "only the project's disk operations");
      },
    ),
    fails('INVALID_ARGUMENT', 'no parent_id', (ctx) => ctx.grpc.call(D.listOperationsByParent, {}, { token: ctx.admin })),
    fails('UNAUTHENTICATED', 'no token', (ctx) => ctx.grpc.call(D.listOperationsByParent, { parentId: ctx.project }, NONE)),
  ],
};
