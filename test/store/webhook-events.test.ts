import { capturedEventSql, decodeWebhookEvent, encodeWebhookEvent, type WebhookEvent } from '../../src/store/repositories/webhook-events.js';
import type { Database } from '../../src/store/database.js';
import { openTestDatabase } from '../support/app.js';

const ROUTE = '0b8e4d7c-3f7a-4c55-9d1e-2a6b1c9e8f00';

describe('webhook NOTIFY payloads', () => {
  test.each<[string, { given: WebhookEvent; want: string }]>([
    ['captures name their route and sequence numbers', { given: { kind: 'captured', routeId: ROUTE, seqs: [7, 8, 12] }, want: `c ${ROUTE} 7,8,12` }],
    ['a deleted or swept route names the route', { given: { kind: 'route_gone', routeId: ROUTE }, want: `d ${ROUTE}` }],
  ])('%s, and decode to the same event', (_name, { given, want }) => {
    expect(encodeWebhookEvent(given)).toBe(want);
    expect(decodeWebhookEvent(want)).toEqual(given);
  });

  test.each([
    ['an empty payload', ''],
    ['an unknown kind', `x ${ROUTE} 1`],
    ['captures without sequence numbers', `c ${ROUTE}`],
    ['a kind without a route', 'd'],
  ])('%s is ignored', (_name, payload) => {
    expect(decodeWebhookEvent(payload)).toBeUndefined();
  });

  describe('the SQL form the capture statement notifies with', () => {
    let db: Database;
    let drop: () => Promise<void>;
    beforeAll(async () => ({ db, drop } = await openTestDatabase()));
    afterAll(async () => {
      await db?.close();
      await drop?.();
    });

    test('is the payload the decoder reads', async () => {
      const result = await db.knex.raw(`SELECT ${capturedEventSql('?::uuid', "array_to_string(?::int[], ',')")} AS payload`, [ROUTE, '{3,4,5}']);
      const payload = (result as { rows: Array<{ payload: string }> }).rows[0]?.payload;
      expect(payload).toBe(encodeWebhookEvent({ kind: 'captured', routeId: ROUTE, seqs: [3, 4, 5] }));
    });
  });
});
