/**
 * Waiting for operations (nebius/gosdk operations/operation.go Wait, operations/options.go): poll
 * OperationService.Get every interval until the operation has a status; a polling error the server
 * says may be retried, or a poll that timed out, waits with exponential backoff and jitter (first
 * 1 s ±20%, at most 30 s) and polls again; a finished operation that failed throws OperationError.
 */
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import type { Operation } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import type { OperationService } from '../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { OperationError } from './errors.js';
import { backoffMs, isRetriable, sleep } from './retry.js';

export interface WaitOptions {
  /** Between polls (gosdk DefaultPollInterval = 1 s). */
  intervalMs?: number;
  /** Give up after this long (AbortSignal.timeout's error); unset: wait as long as it takes. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Called with every polled state of a running operation (its progress_data, when the server sets it). */
  onProgress?(operation: Operation): void;
}

const POLL_ERROR_BACKOFF = { initialBackoffMs: 1000, maxBackoffMs: 30_000, jitter: 0.2 };

/** The final Operation once it succeeded; throws OperationError when it failed. */
export async function waitForOperation(operations: Client<typeof OperationService>, operation: Operation, options: WaitOptions = {}): Promise<Operation> {
  const interval = options.intervalMs !== undefined && options.intervalMs > 0 ? options.intervalMs : 1000;
  const signals = [options.signal, options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs)].filter(
    (signal): signal is AbortSignal => signal !== undefined,
  );
  const signal = signals.length > 0 ? AbortSignal.any(signals) : undefined;
  let current = operation;
  let failedPolls = 0;
  while (!current.status) {
    await sleep(failedPolls === 0 ? interval : backoffMs(failedPolls, POLL_ERROR_BACKOFF), signal);
    try {
      current = await operations.get({ id: current.id }, { signal });
      failedPolls = 0;
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      // gosdk isRetriablePollError: what may be retried, and a poll that timed out (conn.TimeoutError).
      const timedOut = error instanceof ConnectError && error.code === Code.DeadlineExceeded;
      if (!(timedOut || isRetriable(error))) throw error;
      failedPolls++;
      continue;
    }
    if (!current.status) options.onProgress?.(current);
  }
  if (current.status.code !== 0) throw new OperationError(current);
  return current;
}
