import { CaptureWriter } from '../../../src/services/webhooks/capture-writer.js';
import { RouteCache } from '../../../src/services/webhooks/route-cache.js';
import type { CapturedRecord } from '../../../src/engines/webhook-capture/index.js';
import type { BatchResult, RouteRow } from '../../../src/store/repositories/webhook-repository.js';

function record(id: string, routeId = 'live'): CapturedRecord {
  return {
    id,
    routeId,
    receivedAt: new Date(),
    method: 'POST',
    path: '/',
    query: '',
    headers: [],
    contentType: null,
    size: 0,
    truncated: false,
    body: Buffer.alloc(0),
    remoteAddress: '',
    httpVersion: '1.1',
  };
}

/** A store that records batches and commits when told to. */
function controlledStore() {
  const batches: string[][] = [];
  const commits: Array<() => void> = [];
  const store = (records: readonly CapturedRecord[]) =>
    new Promise<BatchResult>((resolve) => {
      batches.push(records.map((item) => item.id));
      commits.push(() =>
        resolve({
          liveRoutes: new Set(records.filter((item) => item.routeId === 'live').map((item) => item.routeId)),
          stored: records.filter((item) => item.routeId === 'live').length,
          dropped: 0,
        }),
      );
    });
  return { batches, commits, store };
}

describe('CaptureWriter', () => {
  test('captures arriving while a batch commits go out together in the next batch', async () => {
    const { batches, commits, store } = controlledStore();
    const writer = new CaptureWriter({ store, batchMs: 0, batchRows: 100 });
    const first = writer.write(record('a'));
    const rest = ['b', 'c', 'd'].map((id) => writer.write(record(id)));
    expect(batches).toEqual([['a']]);
    commits[0]!();
    expect(await first).toBe('stored');
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([['a'], ['b', 'c', 'd']]);
    commits[1]!();
    expect(await Promise.all(rest)).toEqual(['stored', 'stored', 'stored']);
  });

  test('a sender is not answered before its batch is committed', async () => {
    const { commits, store } = controlledStore();
    const writer = new CaptureWriter({ store, batchMs: 0, batchRows: 100 });
    let answered = false;
    const pending = writer.write(record('a')).then(() => (answered = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    commits[0]!();
    await pending;
    expect(answered).toBe(true);
  });

  test('a full batch is written without waiting for the timer', () => {
    const { batches, store } = controlledStore();
    const writer = new CaptureWriter({ store, batchMs: 60_000, batchRows: 2 });
    void writer.write(record('a'));
    expect(batches).toEqual([]);
    void writer.write(record('b'));
    expect(batches).toEqual([['a', 'b']]);
  });

  test('under load (a batch ended within batchMs) the next batch starts once waiting I/O is read, not after the timer', async () => {
    const { batches, commits, store } = controlledStore();
    const writer = new CaptureWriter({ store, batchMs: 60_000, batchRows: 2 });
    const full = [writer.write(record('a')), writer.write(record('b'))];
    commits[0]!();
    await Promise.all(full);
    void writer.write(record('c'));
    expect(batches).toEqual([['a', 'b']]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([['a', 'b'], ['c']]);
  });

  test('after a quiet spell the first capture waits for the timer to gather others', async () => {
    const { batches, commits, store } = controlledStore();
    const writer = new CaptureWriter({ store, batchMs: 60_000, batchRows: 100 });
    void writer.write(record('a'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([]);
    const stopped = writer.stop();
    commits[0]!();
    await stopped;
    expect(batches).toEqual([['a']]);
  });

  test('captures of a route that is gone at commit time are reported as such', async () => {
    const { commits, store } = controlledStore();
    const writer = new CaptureWriter({ store, batchMs: 0, batchRows: 100 });
    const gone = writer.write(record('x', 'deleted'));
    commits[0]!();
    expect(await gone).toBe('route_gone');
  });

  test('stop() writes everything still queued before it resolves, then refuses new captures', async () => {
    const stored: string[] = [];
    const writer = new CaptureWriter({
      store: async (records) => {
        stored.push(...records.map((item) => item.id));
        return { liveRoutes: new Set(['live']), stored: records.length, dropped: 0 };
      },
      batchMs: 60_000,
      batchRows: 100,
    });
    const pending = ['a', 'b', 'c'].map((id) => writer.write(record(id)));
    await writer.stop();
    expect(stored).toEqual(['a', 'b', 'c']);
    expect(await Promise.all(pending)).toEqual(['stored', 'stored', 'stored']);
    await expect(writer.write(record('late'))).rejects.toThrow('stopped');
  });

  test('a failed batch rejects its captures (the senders get an error, not an acknowledgement)', async () => {
    const writer = new CaptureWriter({ store: () => Promise.reject(new Error('disk full')), batchMs: 0, batchRows: 100 });
    await expect(writer.write(record('a'))).rejects.toThrow('disk full');
  });

  test('a deadlock is retried and then succeeds', async () => {
    let calls = 0;
    const writer = new CaptureWriter({
      store: async () => {
        calls++;
        if (calls === 1) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
        return { liveRoutes: new Set(['live']), stored: 1, dropped: 0 };
      },
      batchMs: 0,
      batchRows: 100,
    });
    expect(await writer.write(record('a'))).toBe('stored');
    expect(calls).toBe(2);
  });
});

describe('RouteCache', () => {
  const route = (expiresAt: number): RouteRow => ({
    id: 'r',
    createdAt: new Date(0),
    expiresAt: new Date(expiresAt),
    response: null,
    delayMs: 0,
    verify: null,
  });

  test('a fresh entry answers without loading; an old one is loaded again', async () => {
    let now = 1000;
    let loads = 0;
    const cache = new RouteCache(
      async () => (loads++, route(100_000)),
      1000,
      100,
      () => now,
    );
    expect(await cache.lookup('r')).not.toBeNull();
    expect(cache.lookup('r')).not.toBeInstanceOf(Promise);
    now += 999;
    cache.lookup('r');
    expect(loads).toBe(1);
    now += 1;
    await cache.lookup('r');
    expect(loads).toBe(2);
  });

  test('an expired route is absent even while its entry is fresh', async () => {
    let now = 1000;
    const cache = new RouteCache(
      async () => route(1500),
      10_000,
      100,
      () => now,
    );
    expect(await cache.lookup('r')).not.toBeNull();
    now = 1500;
    expect(cache.lookup('r')).toBeNull();
  });

  test('an invalidated route is absent at once', async () => {
    const cache = new RouteCache(async () => route(Date.now() + 100_000));
    expect(await cache.lookup('r')).not.toBeNull();
    cache.invalidate('r');
    expect(cache.lookup('r')).toBeNull();
  });

  test('concurrent lookups of one id share one load, and unknown ids are cached too', async () => {
    let loads = 0;
    const cache = new RouteCache(async () => {
      loads++;
      return undefined;
    });
    expect(await Promise.all([cache.lookup('x'), cache.lookup('x'), cache.lookup('x')])).toEqual([null, null, null]);
    expect(cache.lookup('x')).toBeNull();
    expect(loads).toBe(1);
  });

  test('the cache never holds more than its bound', () => {
    const cache = new RouteCache(async () => undefined, 1000, 10);
    for (let index = 0; index < 100; index++) cache.remember(`id-${index}`, null);
    expect((cache as unknown as { entries: Map<string, unknown> }).entries.size).toBeLessThanOrEqual(10);
  });
});
