import type { DescMethod, DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, type ContextValues, type HandlerContext } from '@connectrpc/connect';

/**
 * The context of one call, as connect's `createHandlerContext` makes it, minus its per-call costs:
 * the AbortSignal (connect links three AbortControllers per call) is made only when something reads
 * it, which no unary method here does; the request header is used as given (connect copies it); the
 * deadline timer is set only for a `grpc-timeout` and cleared when the call ends.
 */
export class CallContext implements HandlerContext {
  readonly requestMethod = 'POST';
  readonly protocolName = 'grpc';
  /** Made when first read: most calls set no response header or trailer of their own. */
  madeResponseHeader: Headers | undefined;
  madeResponseTrailer: Headers | undefined;
  private controller: AbortController | undefined;
  private abortReason: { reason: unknown } | undefined;
  private readonly deadline: number | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly service: DescService,
    readonly method: DescMethod,
    readonly url: string,
    readonly requestHeader: Headers,
    timeoutMs: number | undefined,
    readonly values: ContextValues,
  ) {
    if (timeoutMs !== undefined) {
      this.deadline = Date.now() + timeoutMs;
      const expire = () => this.abort(new ConnectError('the operation timed out', Code.DeadlineExceeded));
      if (timeoutMs <= 0) expire();
      else this.timer = setTimeout(expire, timeoutMs);
    }
  }

  get responseHeader(): Headers {
    return (this.madeResponseHeader ??= new Headers());
  }

  get responseTrailer(): Headers {
    return (this.madeResponseTrailer ??= new Headers());
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason) this.controller.abort(this.abortReason.reason);
    }
    return this.controller.signal;
  }

  /** A method, not an arrow property: no closure per call (a copied context wraps it, invoke-unary.ts). */
  timeoutMs(): number | undefined {
    return this.deadline === undefined ? undefined : this.deadline - Date.now();
  }

  abort(reason: unknown): void {
    this.end();
    if (this.abortReason) return;
    this.abortReason = { reason };
    this.controller?.abort(reason);
  }

  /** The call is over: no deadline to watch any more. */
  end(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
