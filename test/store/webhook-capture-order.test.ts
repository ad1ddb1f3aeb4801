import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Database } from '../../src/store/database.js';
import { decodeWebhookEvent, WEBHOOK_CHANNEL } from '../../src/store/repositories/webhook-events.js';
import { WebhookRepository } from '../../src/store/repositories/webhook-repository.js';
import type { CapturedRecord } from '../../src/store/repositories/webhook-records.js';
import { openTestDatabase } from '../support/app.js';
import { budget } from '../support/budget.js';

/**
 * A route's sequence numbers are its event stream's ids (SSE `id:`, `Last-Event-ID`, the list
 * cursor), so they must be handed out in the order the captures commit: a batch that takes a
 * number commits before any later batch of the same route can take one (docs/webhooks.md, "Live
 * events in commit order"). The interleaving is forced, not hoped for: a trigger holds one batch
 * after its row was built and before it commits, on an advisory lock this test releases.
 *
 * PostgreSQL only: PGlite has one connection and runs one statement at a time, so two batches can
 * never interleave there (each statement commits before the next one starts).
 */
const onPostgres = process.env.DATABASE_URL ? describe : describe.skip;

/** The advisory lock a held batch waits on (any number no other test uses). */
const GATE = 7_301_727;

onPostgres('capture sequence numbers and commit order', () => {
  let db: Database;
  let drop: () => Promise<void>;
  let gate: pg.Client;
  let listener: pg.Client;
  const notified: number[] = [];

  beforeAll(async () => {
    ({ db, drop } = await openTestDatabase());
    const connectionString = (db.knex.client as { config: { connection: { connectionString: string } } }).config.connection.connectionString;
    // A capture whose path is /held waits, once its row has its values (its seq included), until
    // the gate opens.
    await db.knex.raw(`
      CREATE FUNCTION test_hold_capture() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.path = '/held' THEN PERFORM pg_advisory_xact_lock_shared(${GATE}); END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_hold_capture BEFORE INSERT ON webhook_requests FOR EACH ROW EXECUTE FUNCTION test_hold_capture();`);
    gate = new pg.Client({ connectionString });
    await gate.connect();
    // NOTIFY is delivered in commit order: what this connection hears is the order batches committed in.
    listener = new pg.Client({ connectionString });
    await listener.connect();
    listener.on('notification', (message) => {
      const event = decodeWebhookEvent(message.payload ?? '');
      if (event?.kind === 'captured') notified.push(...event.seqs);
    });
    await listener.query(`LISTEN ${WEBHOOK_CHANNEL}`);
  });
  afterAll(async () => {
    await gate?.end();
    await listener?.end();
    await db?.close();
    await drop?.();
  });

  test('a batch that commits late never carries a lower seq than one of the same route that committed before it', async () => {
    const repository = new WebhookRepository(db.knex);
    const routeId = randomUUID();
    await repository.insertRoute({ id: routeId, createdAt: new Date(), expiresAt: new Date(Date.now() + 3600_000), response: null, delayMs: 0, verify: null });
    await gate.query('SELECT pg_advisory_lock($1)', [GATE]);
    const held = repository.storeBatch([capture(routeId, '/held')], 1000);
    await until(async () => (await waitingLocks('advisory')) > 0);
    // Another replica's batch for the same route, while the first one is still uncommitted.
    let freeCommitted = false;
    const free = repository.storeBatch([capture(routeId, '/free')], 1000).then((result) => {
      freeCommitted = true;
      return result;
    });
    // It either commits at once (the first batch's seq then commits after a higher one) or waits
    // for the first batch's row lock (and takes its seq after that batch committed).
    await until(async () => freeCommitted || (await waitingLocks('row')) > 0);
    await gate.query('SELECT pg_advisory_unlock($1)', [GATE]);
    expect([(await held).stored, (await free).stored]).toEqual([1, 1]);
    const seqs = new Map((await repository.capturesAfter(routeId, 0, 10)).map((stored) => [stored.path, stored.seq]));
    const [heldSeq, freeSeq] = [seqs.get('/held')!, seqs.get('/free')!];
    await until(async () => notified.length >= 2);

    expect(notified).toEqual([heldSeq, freeSeq]);
    expect(heldSeq).toBeLessThan(freeSeq);
    // The list and the resume cursor agree with that order.
    expect((await repository.capturesAfter(routeId, 0, 10)).map((stored) => stored.path)).toEqual(['/held', '/free']);
  });

  /**
   * Backends of this test's database waiting for a lock: an `advisory` one, or the row and
   * transaction locks of a blocked UPDATE (other databases of the cluster are other tests').
   */
  async function waitingLocks(kind: 'advisory' | 'row'): Promise<number> {
    const events = kind === 'advisory' ? ['advisory'] : ['transactionid', 'tuple'];
    const { rows } = await gate.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = ANY($1)`,
      [events],
    );
    return rows[0]?.n ?? 0;
  }
});

function capture(routeId: string, path: string): CapturedRecord {
  return {
    id: randomUUID(),
    routeId,
    receivedAt: new Date(),
    method: 'POST',
    path,
    query: '',
    headers: [['Content-Type', 'text/plain']],
    contentType: 'text/plain',
    size: 2,
    truncated: false,
    body: Buffer.from('hi'),
    remoteAddress: '127.0.0.1',
    httpVersion: '1.1',
  };
}

/** Polls `condition` until it holds; fails after a load-scaled bound. */
async function until(condition: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + budget(2_000);
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
