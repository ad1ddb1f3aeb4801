/** One header line as received: name case kept. */
export type HeaderLine = [name: string, value: string];

/** A captured request as stored: raw facts only; text, JSON and form views are derived when read. */
export interface CapturedRecord {
  id: string;
  routeId: string;
  receivedAt: Date;
  method: string;
  path: string;
  query: string;
  headers: HeaderLine[];
  contentType: string | null;
  size: number;
  truncated: boolean;
  body: Buffer;
  remoteAddress: string;
  httpVersion: string;
}
