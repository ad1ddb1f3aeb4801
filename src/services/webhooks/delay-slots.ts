/**
 * Bounds the delayed answers pending per route in this process: a route with `response.delayMs`
 * holds each sender's socket for the delay, so without a bound one route could hold thousands.
 */
export class DelaySlots {
  private readonly pending = new Map<string, number>();

  constructor(private readonly perRoute: number) {}

  /** A slot (call the answer to give it back, once), or null when the route's slots are all taken. */
  take(routeId: string): (() => void) | null {
    const held = this.pending.get(routeId) ?? 0;
    if (held >= this.perRoute) return null;
    this.pending.set(routeId, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.pending.get(routeId) ?? 1) - 1;
      if (left <= 0) this.pending.delete(routeId);
      else this.pending.set(routeId, left);
    };
  }
}
