/**
 * The NOTIFY messages of the webhook inspector, in one place: the channel, the payload format the
 * repository's statements send (from SQL too) and the decoder the live feed reads them with.
 * Payloads carry ids only, because NOTIFY is limited to 8000 bytes: `c <routeId> <seq,seq,…>`
 * names the captures a commit stored, `d <routeId>` a route that was deleted or swept.
 */

/** The channel that tells every server process about new captures and deleted routes. */
export const WEBHOOK_CHANNEL = 'webhook_events';

export type WebhookEvent = { kind: 'captured'; routeId: string; seqs: number[] } | { kind: 'route_gone'; routeId: string };

export function encodeWebhookEvent(event: WebhookEvent): string {
  return event.kind === 'captured' ? `c ${event.routeId} ${event.seqs.join(',')}` : `d ${event.routeId}`;
}

/**
 * The `captured` payload as a SQL expression, for statements that notify from their own rows:
 * `routeId` is a uuid or text expression, `seqs` a text expression of comma-joined numbers.
 */
export function capturedEventSql(routeId: string, seqs: string): string {
  return `'c ' || ${routeId} || ' ' || ${seqs}`;
}

/** The event of a payload; undefined for anything this version does not send (ignored, not an error). */
export function decodeWebhookEvent(payload: string): WebhookEvent | undefined {
  const [kind, routeId, list] = payload.split(' ');
  if (!routeId) return undefined;
  if (kind === 'd') return { kind: 'route_gone', routeId };
  if (kind !== 'c' || !list) return undefined;
  return { kind: 'captured', routeId, seqs: list.split(',').map(Number).filter(Number.isSafeInteger) };
}
