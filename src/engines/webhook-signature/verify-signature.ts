/**
 * Webhook signature verification engine: tells whether a captured request's signature is valid for
 * a route's scheme and secret. It works on the stored bytes and header lines only (no transport),
 * and "now" is the moment of capture, so a capture verifies the same way whenever it is read.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components } from '../../../generated/openapi/webhooks.js';

/** The schemes the webhooks contract names (`RouteVerification.scheme`). */
export type SignatureScheme = components['schemas']['RouteVerification']['scheme'];
/** Why a signature check failed, as a capture's `signature.reason` names it. */
export type SignatureFailure = NonNullable<NonNullable<components['schemas']['CapturedRequest']['signature']>['reason']>;

/** Every scheme, checked against the contract's enum in both directions by the compiler. */
export const SIGNATURE_SCHEMES = ['standard-webhooks', 'stripe', 'github', 'hmac-sha256'] as const satisfies readonly SignatureScheme[];
const everySchemeListed: SignatureScheme extends (typeof SIGNATURE_SCHEMES)[number] ? true : never = true;
void everySchemeListed;

export interface VerifyConfig {
  scheme: SignatureScheme;
  secret: string;
  /** hmac-sha256 only: the header holding the signature (default X-Signature). */
  header: string | null;
  /** standard-webhooks and stripe: how far the signed timestamp may be from the capture time. */
  toleranceSeconds: number;
}

export interface SignedRequest {
  headers: ReadonlyArray<readonly [string, string]>;
  body: Buffer;
  receivedAt: Date;
}

export interface SignatureCheck {
  scheme: SignatureScheme;
  valid: boolean;
  reason: SignatureFailure | null;
}

export const DEFAULT_HMAC_HEADER = 'X-Signature';
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Checks one request against a route's verification settings; never throws on bad input. */
export function verifySignature(config: VerifyConfig, request: SignedRequest): SignatureCheck {
  const reason = failureOf(config, request);
  return { scheme: config.scheme, valid: reason === null, reason };
}

function failureOf(config: VerifyConfig, request: SignedRequest): SignatureFailure | null {
  switch (config.scheme) {
    case 'standard-webhooks':
      return standardWebhooks(config, request);
    case 'stripe':
      return stripe(config, request);
    case 'github': {
      const value = headerValue(request, 'x-hub-signature-256');
      if (value === undefined) return 'no_signature_header';
      const match = /^sha256=([0-9a-fA-F]{64})$/.exec(value.trim());
      if (!match) return 'malformed_header';
      return matches(hmac(config.secret, request.body), [Buffer.from(match[1]!, 'hex')]);
    }
    case 'hmac-sha256': {
      const value = headerValue(request, (config.header ?? DEFAULT_HMAC_HEADER).toLowerCase());
      if (value === undefined) return 'no_signature_header';
      const signature = decodeDigest(value.trim().replace(/^sha256=/i, ''));
      if (!signature) return 'malformed_header';
      return matches(hmac(config.secret, request.body), [signature]);
    }
  }
}

/** https://www.standardwebhooks.com: HMAC-SHA256 of `id.timestamp.body` under the base64 key after `whsec_`. */
function standardWebhooks(config: VerifyConfig, request: SignedRequest): SignatureFailure | null {
  const signatures = headerValues(request, 'webhook-signature');
  const id = headerValue(request, 'webhook-id');
  const timestamp = headerValue(request, 'webhook-timestamp');
  if (signatures.length === 0 || id === undefined || timestamp === undefined) return 'no_signature_header';
  const candidates = signatures
    .join(' ')
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => decodeBase64(entry.slice(3)));
  if (!/^\d{1,15}$/.test(timestamp.trim()) || candidates.length === 0 || candidates.some((candidate) => candidate === undefined)) return 'malformed_header';
  if (!withinTolerance(Number(timestamp), config, request)) return 'timestamp_outside_tolerance';
  const key = decodeBase64(config.secret.replace(/^whsec_/, '')) ?? Buffer.from(config.secret, 'utf8');
  const expected = hmac(key, Buffer.concat([Buffer.from(`${id}.${timestamp.trim()}.`, 'utf8'), request.body]));
  return matches(expected, candidates as Buffer[]);
}

/** https://docs.stripe.com/webhooks#verify-manually: HMAC-SHA256 of `t.body` under the secret as text. */
function stripe(config: VerifyConfig, request: SignedRequest): SignatureFailure | null {
  const value = headerValue(request, 'stripe-signature');
  if (value === undefined) return 'no_signature_header';
  let timestamp: string | undefined;
  const candidates: Buffer[] = [];
  for (const item of value.split(',')) {
    const at = item.indexOf('=');
    if (at === -1) return 'malformed_header';
    const key = item.slice(0, at).trim();
    const part = item.slice(at + 1).trim();
    if (key === 't') timestamp = part;
    else if (key === 'v1') {
      if (!/^[0-9a-fA-F]{64}$/.test(part)) return 'malformed_header';
      candidates.push(Buffer.from(part, 'hex'));
    }
  }
  if (timestamp === undefined || !/^\d{1,15}$/.test(timestamp) || candidates.length === 0) return 'malformed_header';
  if (!withinTolerance(Number(timestamp), config, request)) return 'timestamp_outside_tolerance';
  return matches(hmac(config.secret, Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), request.body])), candidates);
}

function withinTolerance(seconds: number, config: VerifyConfig, request: SignedRequest): boolean {
  return Math.abs(request.receivedAt.getTime() / 1000 - seconds) <= config.toleranceSeconds;
}

function hmac(key: string | Buffer, data: Buffer): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

function matches(expected: Buffer, candidates: readonly Buffer[]): SignatureFailure | null {
  return candidates.some((candidate) => candidate.length === expected.length && timingSafeEqual(candidate, expected)) ? null : 'no_signature_matches';
}

function headerValues(request: SignedRequest, lowerName: string): string[] {
  return request.headers.filter(([name]) => name.toLowerCase() === lowerName).map(([, value]) => value);
}

function headerValue(request: SignedRequest, lowerName: string): string | undefined {
  return headerValues(request, lowerName)[0];
}

/** A SHA-256 digest written as hex or base64 (standard or URL-safe); undefined otherwise. */
function decodeDigest(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  const bytes = decodeBase64(text);
  return bytes?.length === 32 ? bytes : undefined;
}

function decodeBase64(text: string): Buffer | undefined {
  if (text === '' || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return undefined;
  return Buffer.from(text, /[-_]/.test(text) ? 'base64url' : 'base64');
}
