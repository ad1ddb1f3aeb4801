import { randomUUID } from 'node:crypto';
import type { Database } from '../../../src/store/database.js';
import { WebhookRepository } from '../../../src/store/repositories/webhook-repository.js';
import { WebhookSweeper } from '../../../src/services/webhooks/sweeper.js';
import { openTestDatabase } from '../../support/app.js';

let db: Database | undefined;
let drop: (() => Promise<void>) | undefined;
beforeAll(async () => ({ db, drop } = await openTestDatabase()));
afterAll(async () => {
  await db?.close();
  await drop?.();
});

/** A route expired an hour ago with `captures` rows, inserted as the server's own capture statement does. */
async function expiredRoute(repository: WebhookRepository, captures: number): Promise<string> {
  const id = randomUUID();
  await repository.insertRoute({ id, createdAt: new Date(), expiresAt: new Date(Date.now() + 60_000), response: null, delayMs: 0, verify: null });
  const records = Array.from({ length: captures }, (_, index) => ({
    id: randomUUID(),
    routeId: id,
    receivedAt: new Date(),
    method: 'POST',
    path: `/${id}`,
    query: '',
    headers: [['Content-Type', 'text/plain']] as Array<[string, string]>,
    contentType: 'text/plain',
    size: 3,
    truncated: false,
    body: Buffer.from(String(index)),
    remoteAddress: '127.0.0.1',
    httpVersion: '1.1',
  }));
  await repository.storeBatch(records, 10_000);
  await db!
    .knex('webhook_routes')
    .where({ id })
    .update({ expires_at: new Date(Date.now() - 3600_000) });
  return id;
}

describe('the webhook sweeper', () => {
  test('deletes the captures of expired routes in chunks of at most the chunk size per statement, then the routes', async () => {
    const repository = new WebhookRepository(db!.knex);
    const live = randomUUID();
    await repository.insertRoute({ id: live, createdAt: new Date(), expiresAt: new Date(Date.now() + 3600_000), response: null, delayMs: 0, verify: null });
    const expired = [await expiredRoute(repository, 25), await expiredRoute(repository, 7)];

    const perStatement: number[] = [];
    const deleteChunk = repository.deleteExpiredCaptures.bind(repository);
    repository.deleteExpiredCaptures = async (routeIds, chunk) => {
      const deleted = await deleteChunk(routeIds, chunk);
      perStatement.push(deleted);
      return deleted;
    };
    const statements: string[] = [];
    const onQuery = (query: { sql: string }) => statements.push(query.sql);
    db!.knex.on('query', onQuery);
    try {
      const sweeper = new WebhookSweeper(repository, 60_000, undefined, { chunk: 10, batch: 100 });
      expect(await sweeper.sweepOnce()).toBe(2);
    } finally {
      db!.knex.removeListener('query', onQuery);
    }

    expect(perStatement).toEqual([10, 10, 10, 2]);
    expect(statements.filter((sql) => /^DELETE FROM webhook_requests/.test(sql.trim()))).toHaveLength(4);
    const left = await db!.knex('webhook_requests').whereIn('route_id', expired).count({ n: '*' });
    expect(Number(left[0]!.n)).toBe(0);
    expect(await db!.knex('webhook_routes').whereIn('id', expired).count({ n: '*' })).toEqual([{ n: 0 }]);
    expect(await repository.findLiveRoute(live)).toBeDefined();
  });

  test('a backlog of expired routes is swept batch after batch until none is left', async () => {
    const repository = new WebhookRepository(db!.knex);
    const routes = [];
    for (let index = 0; index < 5; index++) routes.push(await expiredRoute(repository, 3));
    const sweeper = new WebhookSweeper(repository, 60_000, undefined, { chunk: 4, batch: 2 });
    expect(await sweeper.sweepOnce()).toBe(5);
    expect(await db!.knex('webhook_routes').whereIn('id', routes).count({ n: '*' })).toEqual([{ n: 0 }]);
  });
});
