/**
 * Waiting for operations: with OperationService.Wait (the server answers when the operation
 * completes, or after each wait's timeout with its current state), falling back to the Go SDK's
 * polling against a server without Wait (UNIMPLEMENTED): nebius/gosdk operations/operation.go Wait,
 * operations/options.go — poll OperationService.Get every interval until the operation has a status.
 * Either way a call error the server says may be retried, or a call that timed out, waits with
 * exponential backoff and jitter (first 1 s ±20%, at most 30 s) and tries again; a finished operation
 * that failed throws OperationError.
 */
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import type { Operation } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import type { OperationService } from '../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { OperationError } from './errors.js';
import { backoffMs, isRetriable, sleep } from './retry.js';

export interface WaitOptions {
  /** Between polls when the server has no Wait (gosdk DefaultPollInterval = 1 s); with `onProgress`, how often progress is reported. */
  intervalMs?: number;
  /** Give up after this long (AbortSignal.timeout's error); unset: wait as long as it takes. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Called with every state of a running operation seen (its progress_data, when the server sets it). */
  onProgress?(operation: Operation): void;
  /** Poll Get even when the server has Wait. */
  poll?: boolean;
}

const POLL_ERROR_BACKOFF = { initialBackoffMs: 1000, maxBackoffMs: 30_000, jitter: 0.2 };

/** One server-side wait at most this long (the server's own default; it caps at 60 s). */
const SERVER_WAIT_MS = 30_000;

/** Servers known to answer UNIMPLEMENTED to OperationService.Wait, per client: asked once, then polled. */
const withoutWait = new WeakSet<object>();

/** The final Operation once it succeeded; throws OperationError when it failed. */
export async function waitForOperation(operations: Client<typeof OperationService>, operation: Operation, options: WaitOptions = {}): Promise<Operation> {
  const interval = options.intervalMs !== undefined && options.intervalMs > 0 ? options.intervalMs : 1000;
  const signals = [options.signal, options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs)].filter(
    (signal): signal is AbortSignal => signal !== undefined,
  );
  const signal = signals.length > 0 ? AbortSignal.any(signals) : undefined;
  let current = operation;
  let failedCalls = 0;
  while (!current.status) {
    const serverSide = !options.poll && !withoutWait.has(operations);
    const pause = failedCalls > 0 ? backoffMs(failedCalls, POLL_ERROR_BACKOFF) : serverSide ? 0 : interval;
    if (pause > 0) await sleep(pause, signal);
    try {
      if (serverSide) {
        // With a progress line to keep fresh, the server answers at least every `interval`.
        const waitMs = options.onProgress ? Math.min(interval, SERVER_WAIT_MS) : SERVER_WAIT_MS;
        current = await operations.wait(
          { id: current.id, timeout: { seconds: BigInt(Math.floor(waitMs / 1000)), nanos: (waitMs % 1000) * 1_000_000 } },
          { signal },
        );
      } else {
        current = await operations.get({ id: current.id }, { signal });
      }
      failedCalls = 0;
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (serverSide && error instanceof ConnectError && error.code === Code.Unimplemented) {
        withoutWait.add(operations);
        continue;
      }
      // gosdk isRetriablePollError: what may be retried, and a poll that timed out (conn.TimeoutError).
      const timedOut = error instanceof ConnectError && error.code === Code.DeadlineExceeded;
      if (!(timedOut || isRetriable(error))) throw error;
      failedCalls++;
      continue;
    }
    if (!current.status) options.onProgress?.(current);
  }
  if (current.status.code !== 0) throw new OperationError(current);
  return current;
}

/** Asks the server to cancel a running operation (OperationService.Cancel); answers it, CANCELLED once the work stopped. */
export function cancelOperation(operations: Client<typeof OperationService>, operation: Operation | string): Promise<Operation> {
  return operations.cancel({ id: typeof operation === 'string' ? operation : operation.id });
}
