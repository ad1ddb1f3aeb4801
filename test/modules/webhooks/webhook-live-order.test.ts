import http from 'node:http';
import { startPeerServer, startServer, type PeerServer, type TestServer } from '../../support/app.js';
import { budget } from '../../support/budget.js';
import { createRoute, rawRequest } from './support.js';

/**
 * Live events in commit order across replicas (issue 27 item 3, docs/webhooks.md): four servers on
 * one database capture concurrently for one route while a listener follows the route's event stream
 * the way `cfs webhooks listen` does — it keeps the last id it got and, every RECONNECT_EVERY events,
 * reconnects to the next server with that id as Last-Event-ID. Every capture must reach it exactly
 * once, each event with an id above every id before it (an event arriving after a higher id is one a
 * resuming client skips).
 *
 * On PostgreSQL the servers have their own pools and LISTEN connections, and a trigger sleeps a
 * little in each captured row after its values (its seq) are set and before it commits, so batches
 * of different servers really interleave: without it the race shows in only some runs. On PGlite
 * (one process, one embedded database) the four servers share one instance and its statements never
 * interleave; the test runs there as well, as a check of the stream's resume logic.
 */
const CAPTURES = 800;
const SENDERS = 16;
const RECONNECT_EVERY = 150;
const onPostgres = Boolean(process.env.DATABASE_URL);

let servers: Array<TestServer | PeerServer> = [];

beforeAll(async () => {
  const first = await startServer({ WEBHOOK_MAX_REQUESTS: '100000' });
  servers = [first];
  for (let peer = 1; peer < 4; peer++) servers.push(await startPeerServer(first, { WEBHOOK_MAX_REQUESTS: '100000' }));
  if (onPostgres) {
    await first.app.db.knex.raw(`
      CREATE FUNCTION test_widen_capture_race() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_sleep(random() * 0.003); RETURN NEW; END $$;
      CREATE TRIGGER test_widen_capture_race BEFORE INSERT ON webhook_requests FOR EACH ROW EXECUTE FUNCTION test_widen_capture_race();`);
  }
}, budget(20_000));
afterAll(async () => {
  for (const server of servers.reverse()) await server.close();
});

test(
  'captures made concurrently on four servers reach a listener that resumes by Last-Event-ID exactly once, each after every lower id',
  async () => {
    const first = servers[0] as TestServer;
    const { routeId } = await createRoute(first);
    const listener = new ResumingListener(
      servers.map((server) => `${server.url}/inspect/${routeId}/stream`),
      RECONNECT_EVERY,
    );
    await listener.start();
    try {
      const sent: string[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: SENDERS }, async (_, sender) => {
          // Senders capture through the three servers the listener starts away from.
          const server = servers[1 + (sender % 3)]!;
          while (next < CAPTURES) {
            const n = next++;
            const answer = await rawRequest(`${server.url}/${routeId}/n/${n}`, 'POST', [['Content-Type', 'text/plain']], `capture ${n}`);
            if (answer.status !== 200) throw new Error(`capture ${n} answered ${answer.status}`);
            sent.push((JSON.parse(answer.body.toString()) as { requestId: string }).requestId);
          }
        }),
      );
      // The newest capture's position is the last page cursor of a one-item list.
      const newest = await first.request('GET', `/inspect/${routeId}?limit=1`, { headers: { accept: 'application/json' } });
      const lastSeq = Number(newest.body.next);
      await listener.reached(lastSeq, budget(15_000));

      expect({ outOfOrder: listener.outOfOrder, reconnects: listener.reconnects >= 4 }).toEqual({ outOfOrder: [], reconnects: true });
      expect([...listener.delivered].sort()).toEqual([...sent].sort());
    } finally {
      listener.stop();
    }
  },
  budget(60_000),
);

/** An event stream client that resumes like `cfs webhooks listen`: by the last id it got. */
class ResumingListener {
  /** Capture ids in the order they were delivered. */
  readonly delivered: string[] = [];
  /** Events that came with an id at or below one already received: a resuming client loses these. */
  readonly outOfOrder: Array<{ id: number; after: number; capture: string }> = [];
  reconnects = 0;
  private cursor: number | undefined;
  private request: http.ClientRequest | undefined;
  private stopped = false;
  private server = 0;
  private readonly waiters = new Set<() => void>();

  constructor(
    private readonly urls: string[],
    private readonly reconnectEvery: number,
  ) {}

  /** Connects; resolves once the stream told where it starts. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => this.connect(resolve, reject));
  }

  stop(): void {
    this.stopped = true;
    this.request?.destroy();
  }

  /** Resolves once an event with id `seq` or higher was received; rejects after `ms`. */
  async reached(seq: number, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while ((this.cursor ?? 0) < seq) {
      if (Date.now() > deadline) throw new Error(`the listener stopped at id ${this.cursor} of ${seq} (${this.delivered.length} delivered)`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 100);
        this.waiters.add(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private connect(onStart?: () => void, onError?: (error: unknown) => void): void {
    if (this.stopped) return;
    const url = this.urls[this.server++ % this.urls.length]!;
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (this.cursor !== undefined) headers['last-event-id'] = String(this.cursor);
    let received = 0;
    let buffer = '';
    const request = http.get(url, { headers, agent: false }, (response) => {
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1 && this.request === request) {
          const lines = buffer.slice(0, end).split('\n');
          buffer = buffer.slice(end + 2);
          const id = Number(lines.find((line) => line.startsWith('id: '))?.slice(4));
          const data = lines.find((line) => line.startsWith('data: '))?.slice(6);
          if (!Number.isSafeInteger(id)) continue;
          if (data === undefined) {
            this.cursor ??= id;
            onStart?.();
            continue;
          }
          const capture = (JSON.parse(data) as { id: string }).id;
          if (this.cursor !== undefined && id <= this.cursor) {
            this.outOfOrder.push({ id, after: this.cursor, capture });
            continue;
          }
          this.delivered.push(capture);
          this.cursor = id;
          for (const wake of this.waiters) wake();
          this.waiters.clear();
          if (++received === this.reconnectEvery) {
            this.reconnects++;
            request.destroy();
            this.connect();
          }
        }
      });
      response.on('error', () => undefined);
    });
    request.on('error', (error) => onError?.(error));
    this.request = request;
  }
}
