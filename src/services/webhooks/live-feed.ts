import type { WebhookEvent } from '../../store/repositories/webhook-events.js';
import type { StoredCapture } from '../../store/repositories/webhook-repository.js';

/** One open event stream of one route. */
export interface FeedSubscriber {
  onCapture(capture: StoredCapture): void;
  /** The route was deleted or swept: the stream should end. */
  onRouteGone(): void;
  /**
   * The highest seq this stream has shown (or started after); undefined while not known yet.
   * After missed notifications the feed re-reads and sends what lies beyond it.
   */
  cursor?(): number | undefined;
}

export interface LiveFeedOptions {
  /** Loads the captures a notification names (the payload carries ids only). */
  load(routeId: string, seqs: number[]): Promise<StoredCapture[]>;
  /** Captures after a seq, oldest first, at most `limit`; null when the route is gone. */
  loadAfter(routeId: string, afterSeq: number, limit: number): Promise<StoredCapture[] | null>;
  /** At most this many captures are re-read per route when catching up (default 500). */
  catchUpLimit?: number;
  /** Told when a route was deleted or swept anywhere (e.g. to drop it from the route cache). */
  onRouteGone?(routeId: string): void;
  onError?(error: unknown): void;
}

/**
 * Fans captures out to the event streams open on this process. Every process LISTENs on one
 * channel; the capture transaction and route deletion NOTIFY it (store/repositories/webhook-events.ts),
 * so a capture on any process reaches streams on all of them. Events carry ids only: a process
 * loads the rows once per notification, and only for routes someone here is watching.
 */
export class LiveFeed {
  private readonly subscribers = new Map<string, Set<FeedSubscriber>>();
  /** Loads per route run one after another, so events keep their commit order. */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(private readonly options: LiveFeedOptions) {}

  subscribe(routeId: string, subscriber: FeedSubscriber): () => void {
    let set = this.subscribers.get(routeId);
    if (!set) {
      set = new Set();
      this.subscribers.set(routeId, set);
    }
    set.add(subscriber);
    return () => {
      set.delete(subscriber);
      if (set.size === 0 && this.subscribers.get(routeId) === set) this.subscribers.delete(routeId);
    };
  }

  /** Ends every stream (shutdown). */
  closeAll(): void {
    for (const set of this.subscribers.values()) for (const subscriber of set) subscriber.onRouteGone();
    this.subscribers.clear();
  }

  /** Handles one event NOTIFYed on the channel. */
  notify(event: WebhookEvent): void {
    const { routeId } = event;
    if (event.kind === 'route_gone') {
      this.routeGone(routeId);
      return;
    }
    if (!this.subscribers.has(routeId)) return;
    const { seqs } = event;
    this.enqueue(routeId, async () => {
      for (const capture of await this.options.load(routeId, seqs)) {
        for (const subscriber of this.subscribers.get(routeId) ?? []) subscriber.onCapture(capture);
      }
    });
  }

  /**
   * Notifications were missed (the LISTEN connection was lost and is back): every watched route
   * re-reads the captures beyond what its streams have shown, and streams of routes deleted
   * meanwhile end.
   */
  resync(): void {
    for (const routeId of this.subscribers.keys()) this.enqueue(routeId, () => this.catchUp(routeId));
  }

  private async catchUp(routeId: string): Promise<void> {
    const cursors = [...(this.subscribers.get(routeId) ?? [])].map((subscriber) => subscriber.cursor?.()).filter((seq): seq is number => seq !== undefined);
    if (cursors.length === 0) return;
    let after = Math.min(...cursors);
    let budget = this.options.catchUpLimit ?? 500;
    while (budget > 0) {
      const captures = await this.options.loadAfter(routeId, after, Math.min(100, budget));
      if (captures === null) {
        this.routeGone(routeId);
        return;
      }
      for (const capture of captures) {
        for (const subscriber of this.subscribers.get(routeId) ?? []) {
          const cursor = subscriber.cursor?.();
          if (cursor !== undefined && capture.seq > cursor) subscriber.onCapture(capture);
        }
        after = capture.seq;
      }
      budget -= captures.length;
      if (captures.length < 100) return;
    }
  }

  private routeGone(routeId: string): void {
    this.options.onRouteGone?.(routeId);
    const set = this.subscribers.get(routeId);
    this.subscribers.delete(routeId);
    for (const subscriber of set ?? []) subscriber.onRouteGone();
  }

  /** Work per route runs one task after another, so events keep their commit order. */
  private enqueue(routeId: string, task: () => Promise<void>): void {
    const previous = this.chains.get(routeId) ?? Promise.resolve();
    const next = previous
      .then(task)
      .catch((error: unknown) => this.options.onError?.(error))
      .finally(() => {
        if (this.chains.get(routeId) === next) this.chains.delete(routeId);
      });
    this.chains.set(routeId, next);
  }
}
