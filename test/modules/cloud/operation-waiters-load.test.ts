import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { InstanceService } from '../../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { budget } from '../../support/budget.js';
import { GrpcCallError } from '../../support/grpc.js';
import { PROJECT, startCloudServer, type CloudServer } from './fixtures.js';

const WAITERS = 1000;
let cloud: CloudServer;

beforeAll(async () => {
  cloud = await startCloudServer({
    // The operation runs until the test cancels it.
    COMPUTE_WORK_MS: '600000',
    OPERATION_MAX_WAITERS: String(WAITERS),
    // One client over one HTTP/2 connection holds every wait.
    HTTP2_MAX_CONCURRENT_STREAMS: String(WAITERS + 100),
    HTTP2_MAX_STREAMS_PER_ADDRESS: String(WAITERS + 100),
  });
}, budget(30_000));
afterAll(() => cloud?.close());

test(
  `${WAITERS} concurrent Wait calls are held by one process (one more is RESOURCE_EXHAUSTED) and all answer when the operation completes`,
  async () => {
    const token = cloud.admin.token;
    const { message: operation } = await cloud.grpc.call(
      InstanceService.method.create,
      { metadata: { parentId: PROJECT, name: 'vm-waited-by-many' } },
      { token },
    );
    global.gc?.();
    const before = process.memoryUsage().rss;
    const waits = Array.from({ length: WAITERS }, () =>
      cloud.grpc.call(OperationService.method.wait, { id: operation.id, timeout: { seconds: 60n } }, { token }).then(({ message }) => message),
    );
    // Once every wait is registered, one more is refused (the per-process cap, OPERATION_MAX_WAITERS).
    const deadline = Date.now() + budget(20_000);
    for (;;) {
      const extra = await cloud.grpc.call(OperationService.method.wait, { id: operation.id, timeout: { nanos: 1_000_000 } }, { token }).then(
        () => undefined,
        (error: unknown) => error,
      );
      if (extra instanceof GrpcCallError && extra.code === 8) {
        expect(extra.serviceError?.details.case).toBe('tooManyRequests');
        break;
      }
      if (Date.now() > deadline) throw new Error(`the ${WAITERS} waits were never all held at once`);
    }
    const held = process.memoryUsage().rss;
    const cancelledAt = Date.now();
    await cloud.grpc.call(OperationService.method.cancel, { id: operation.id }, { token });
    const answers = await Promise.all(waits);
    const answeredIn = Date.now() - cancelledAt;
    console.log(
      `${WAITERS} waits held: RSS ${Math.round(before / 2 ** 20)} MiB → ${Math.round(held / 2 ** 20)} MiB (+${((held - before) / 2 ** 20).toFixed(1)} MiB, ` +
        `${Math.round((held - before) / WAITERS / 1024)} KiB per wait, server and grpc-js client together); all answered ${answeredIn} ms after the cancel`,
    );
    expect(answers.every((answer) => answer.status?.code === 1)).toBe(true);
    // Loosely: a wait costs a stream and a map entry, not megabytes.
    expect(held - before).toBeLessThan(256 * 2 ** 20);
  },
  budget(60_000),
);
