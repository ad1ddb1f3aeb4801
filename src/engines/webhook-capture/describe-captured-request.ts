import { isUtf8 } from 'node:buffer';
import type { components } from '../../../generated/openapi/webhooks.js';
import type { CapturedRecord } from './capture-request.js';

export type CapturedRequestView = components['schemas']['CapturedRequest'];
type MultipartPart = components['schemas']['MultipartPart'];

/** What is derived elsewhere: whether a list left the body out, its signature check and multipart parts. */
export interface CaptureExtras {
  bodyOmitted?: boolean;
  signature?: CapturedRequestView['signature'];
  multipart?: MultipartPart[] | null;
}

/**
 * The JSON view of a stored capture (contracts/openapi/webhooks.yaml): body as base64 always, as text when it is valid
 * UTF-8, parsed as JSON when it is JSON and complete, parsed as a form for urlencoded bodies.
 * Derived when read rather than stored, so capture stays cheap and the rules can improve later.
 * A body a list left out (`bodyOmitted`) shows as empty with null views; `links` lead to it.
 */
export function describeCapturedRequest(record: CapturedRecord, extras: CaptureExtras = {}): CapturedRequestView {
  const bodyOmitted = extras.bodyOmitted ?? false;
  const text = !bodyOmitted && isUtf8(record.body) ? record.body.toString('utf8') : null;
  const self = `/inspect/${record.routeId}/requests/${record.id}`;
  return {
    id: record.id,
    routeId: record.routeId,
    receivedAt: record.receivedAt.toISOString(),
    method: record.method,
    path: record.path,
    query: record.query,
    queryParams: parseUrlEncoded(record.query),
    headers: record.headers.map(([name, value]) => [name, value]),
    contentType: record.contentType,
    size: record.size,
    truncated: record.truncated,
    bodyOmitted,
    bodyBase64: bodyOmitted ? '' : record.body.toString('base64'),
    body: text,
    json: text === null || record.truncated ? null : parseJsonBody(text, record.contentType),
    form: text !== null && isFormContentType(record.contentType) ? parseUrlEncoded(text) : null,
    multipart: extras.multipart ?? null,
    signature: extras.signature ?? null,
    remoteAddress: record.remoteAddress,
    ...(record.proxyChain ? { proxyChain: record.proxyChain } : {}),
    httpVersion: record.httpVersion,
    links: { self, raw: `${self}/raw`, har: `${self}/har`, curl: `${self}/curl` },
  };
}

/** `a=1&a=2&b` → `{a: ['1', '2'], b: ['']}`; a null-prototype object so `__proto__` is just a name. */
function parseUrlEncoded(text: string): Record<string, string[]> {
  const result = Object.create(null) as Record<string, string[]>;
  if (text === '') return result;
  for (const [name, value] of new URLSearchParams(text)) {
    (result[name] ??= []).push(value);
  }
  return result;
}

/** JSON media types: application/json, text/json and any `+json` suffix type. */
function isJsonContentType(contentType: string | null): boolean {
  return contentType !== null && /^\s*(application|text)\/([\w.+-]+\+)?json\s*(;|$)/i.test(contentType);
}

function isFormContentType(contentType: string | null): boolean {
  return contentType !== null && /^\s*application\/x-www-form-urlencoded\s*(;|$)/i.test(contentType);
}

/**
 * A declared JSON body is parsed whatever value it holds; an undeclared one only when it is an
 * object or array (`curl -d '{…}'` sends JSON labelled as a form, and people expect to see it parsed).
 */
function parseJsonBody(text: string, contentType: string | null): unknown {
  const declared = isJsonContentType(contentType);
  if (!declared && !/^\s*[[{]/.test(text)) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}
