import type { SignatureFailure, SignatureScheme } from '../../engines/webhook-signature/index.js';

/** A capture's signature check against its route's `verify` settings. */
export interface StoredSignatureCheck {
  scheme: SignatureScheme;
  valid: boolean;
  reason: SignatureFailure | null;
}

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
  /** The trusted proxies between the client and the server, farthest first; absent when it connected directly. */
  proxyChain?: string[] | undefined;
  httpVersion: string;
  /** Null when the route checks no signatures. */
  signature?: StoredSignatureCheck | null;
}
