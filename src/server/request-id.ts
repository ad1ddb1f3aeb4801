import { randomUUID } from 'node:crypto';

const SAFE = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps a caller's `x-request-id` when it is safe to echo and log, else makes a new one. */
export function requestIdOf(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value !== undefined && SAFE.test(value) ? value : randomUUID();
}
