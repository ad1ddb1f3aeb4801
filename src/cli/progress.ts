/**
 * The progress line of `cfs … --wait` (and `cfs operation wait`): on a terminal, one line on stderr
 * rewritten in place with the operation's `progress_data` (percent done and phase), cleared when the
 * wait ends; nothing at all when stdout is not a terminal (scripts and pipes get only the result).
 */
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { OperationProgressSchema, type Operation } from '../../generated/proto/cloud/common/v1/operation_pb.js';

export interface ProgressLine {
  /** Given to sdk.wait: undefined when no line is shown, so the SDK waits in long server-side steps. */
  onProgress: ((operation: Operation) => void) | undefined;
  /** Clears the line (if one was drawn). */
  done(): void;
}

/** The text of one progress line: `<id>: 40% booting`, or `<id>: running` without progress. */
export function progressText(operation: Operation): string {
  const progress = operation.progressData ? anyUnpack(operation.progressData, OperationProgressSchema) : undefined;
  if (!progress) return `${operation.id}: running`;
  return `${operation.id}: ${progress.percentDone}%${progress.phase ? ` ${progress.phase}` : ''}`;
}

export function progressLine(out: { isTTY?: boolean; write(text: string): unknown }, stdoutIsTty = process.stdout.isTTY === true): ProgressLine {
  if (!stdoutIsTty || out.isTTY !== true) return { onProgress: undefined, done: () => undefined };
  let drawn = false;
  return {
    onProgress(operation) {
      out.write(`\r\x1b[2K${progressText(operation)}`);
      drawn = true;
    },
    done() {
      if (drawn) out.write('\r\x1b[2K');
      drawn = false;
    },
  };
}
