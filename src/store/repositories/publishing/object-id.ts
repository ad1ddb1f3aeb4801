import { randomBytes } from 'node:crypto';

const OBJECT_ID = /^[0-9a-f]{24}$/;

/**
 * A new 24-hex id shaped like a MongoDB ObjectId (4 bytes of seconds, 8 random bytes), so the
 * original app's clients keep their `_id` assumptions and ids sort roughly by creation.
 */
export function newObjectId(): string {
  const seconds = Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, '0');
  return seconds + randomBytes(8).toString('hex');
}

/** Whether `id` could name a record; anything else matches nothing (a 404, never a database error). */
export function isObjectId(id: string): boolean {
  return OBJECT_ID.test(id);
}
