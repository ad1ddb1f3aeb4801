/**
 * Bounds how many of one kind of costly work are pending per key in this process: delayed answers
 * per route (a route with `response.delayMs` holds each sender's socket for the delay) and page reads
 * per client address (an unread page holds its slot until the client reads it or is reset).
 */
export class KeyedSlots {
  private readonly pending = new Map<string, number>();

  constructor(private readonly perKey: number) {}

  /** A slot (call the answer to give it back, once), or null when the key's slots are all taken. */
  take(key: string): (() => void) | null {
    const held = this.pending.get(key) ?? 0;
    if (held >= this.perKey) return null;
    this.pending.set(key, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.pending.get(key) ?? 1) - 1;
      if (left <= 0) this.pending.delete(key);
      else this.pending.set(key, left);
    };
  }
}
