import { create } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createRouterTransport, type ServiceImpl } from '@connectrpc/connect';
import { OperationProgressSchema, OperationSchema, type Operation } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import { OperationService } from '../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { createCloudSdk, OperationError } from '../../src/sdk/index.js';
import { progressLine, progressText } from '../../src/cli/progress.js';

/**
 * sdk.wait and sdk.cancel against an in-memory OperationService (createRouterTransport): a server
 * with Wait is waited on server-side; one that answers UNIMPLEMENTED for it (an older server) is
 * polled with Get, and asked for Wait only once.
 */
function operationAt(step: number, done: number): Operation {
  return create(OperationSchema, {
    id: 'operation-1',
    progressData: anyPack(OperationProgressSchema, create(OperationProgressSchema, { percentDone: Math.min(100, step * 25), phase: 'working' })),
    status: step >= done ? { code: 0, message: '' } : undefined,
  });
}

function sdkOver(implementation: Partial<ServiceImpl<typeof OperationService>>, calls: string[]) {
  return createCloudSdk({
    baseUrl: 'http://in-memory',
    transport: ({ interceptors }) =>
      createRouterTransport((router) => router.service(OperationService, implementation), {
        transport: {
          interceptors: [
            ...interceptors,
            (next) => (req) => {
              calls.push(req.method.name);
              return next(req);
            },
          ],
        },
      }),
    credentials: { token: 'token' },
    retry: { maxAttempts: 1 },
  });
}

test('wait uses OperationService.Wait when the server has it, and reports each running state', async () => {
  const calls: string[] = [];
  let step = 0;
  const timeouts: number[] = [];
  const sdk = sdkOver(
    {
      wait: (request) => {
        timeouts.push(Number(request.timeout?.seconds ?? 0n) * 1000 + (request.timeout?.nanos ?? 0) / 1e6);
        return operationAt(++step, 3);
      },
    },
    calls,
  );
  const seen: string[] = [];
  const done = await sdk.wait(operationAt(0, 3), { intervalMs: 200, onProgress: (operation) => seen.push(progressText(operation)) });
  expect(done.status?.code).toBe(0);
  expect(calls).toEqual(['Wait', 'Wait', 'Wait']);
  expect(seen).toEqual(['operation-1: 25% working', 'operation-1: 50% working']);
  // With a progress line to refresh, each wait is as long as the interval; without, the server's 30 s.
  expect(timeouts).toEqual([200, 200, 200]);
  step = 0;
  await sdk.wait(operationAt(0, 1));
  expect(timeouts.at(-1)).toBe(30_000);
});

test('against a server without Wait (UNIMPLEMENTED), wait polls Get and asks for Wait only once', async () => {
  const calls: string[] = [];
  let step = 0;
  const sdk = sdkOver({ get: () => operationAt(++step, 3) }, calls);
  const done = await sdk.wait(operationAt(0, 3), { intervalMs: 10 });
  expect(done.status?.code).toBe(0);
  expect(calls).toEqual(['Wait', 'Get', 'Get', 'Get']);
  step = 0;
  await sdk.wait(operationAt(0, 3), { intervalMs: 10 });
  expect(calls.slice(4)).toEqual(['Get', 'Get', 'Get']);
});

test('cancel sends OperationService.Cancel, and waiting on a cancelled operation throws OperationError with CANCELLED', async () => {
  const calls: string[] = [];
  const cancelled = create(OperationSchema, { id: 'operation-1', status: { code: Code.Canceled, message: 'the operation was cancelled' } });
  const sdk = sdkOver({ cancel: (request) => ({ ...cancelled, id: request.id }), wait: () => cancelled }, calls);
  expect((await sdk.cancel('operation-1')).status?.code).toBe(Code.Canceled);
  const error = await sdk.wait(operationAt(0, 9)).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(OperationError);
  expect((error as ConnectError).code).toBe(Code.Canceled);
  expect(calls).toEqual(['Cancel', 'Wait']);
});

test('the progress line is drawn only when stdout and stderr are terminals', () => {
  const written: string[] = [];
  const tty = { isTTY: true, write: (text: string) => written.push(text) };
  const quiet = progressLine(tty, false);
  expect(quiet.onProgress).toBeUndefined();
  const line = progressLine(tty, true);
  line.onProgress?.(operationAt(2, 9));
  line.done();
  expect(written).toEqual(['\r\x1b[2Koperation-1: 50% working', '\r\x1b[2K']);
  expect(progressLine({ write: () => undefined }, true).onProgress).toBeUndefined();
});
