export { Operations, newOperationId, WORK_CHANNEL, type NewOperation, type OperationCall, type RecordedHeaders } from './operations.js';
export { OperationWorker, OPERATION_EVENTS_CHANNEL, type CancelOutcome, type Work, type WorkHandler, type OperationWorkerOptions } from './operation-worker.js';
export { OperationWaiters, type OperationWaitersOptions } from './operation-waiters.js';
export { OperationSweeper, IDEMPOTENCY_KEY_RETENTION_SECONDS, type SweepResult } from './operation-sweeper.js';
export {
  IdempotencyKeys,
  assertIdempotencyKey,
  hashedIdempotencyKey,
  requestHash,
  IDEMPOTENCY_KEY_PATTERN,
  type IdempotentResult,
  type PendingKey,
} from './idempotency.js';
export { encodeStatus, okStatus, packOperationRequest, progressData, redactSecrets, toOperationMessage } from './operation-message.js';
