import { STATUS_CODES } from 'node:http';
import { HTTP_STATUS, publicMessage, type AppError } from '../errors.js';
import { ContractRefusal } from './rest-engine/contract-refusal.js';
import type { RestReply } from './reply.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** How problem details word the contract engine's own refusals, which carry only a reason phrase. */
const REFUSAL_DETAIL: Partial<Record<number, string>> = {
  401: 'A valid access token is required.',
  404: 'No such resource.',
};

/**
 * RFC 9457 problem details, the error shape of the publishing (`/v1`) and webhook APIs:
 * `{type, title, status, detail}`, plus `errors: [{field, message}]` on a 400 that names fields.
 * One renderer for every answer of those APIs, fallbacks included. A 400 that names its fields says
 * so in `errors`, so its detail is one fixed sentence whoever refused; 5xx details never carry the
 * cause (`publicMessage`). 401 adds `WWW-Authenticate: Bearer`; 429 and 503 add `Retry-After`.
 */
export function renderProblemDetails(error: AppError): RestReply {
  const status = HTTP_STATUS[error.code];
  const fields = status === 400 && error.violations.length > 0;
  const detail = fields ? 'The request is invalid.' : error instanceof ContractRefusal ? (REFUSAL_DETAIL[status] ?? error.message) : publicMessage(error);
  const body: Record<string, unknown> = { type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail };
  if (fields) body.errors = error.violations;
  const headers: Record<string, string> = {};
  if (status === 401) headers['www-authenticate'] = 'Bearer';
  if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.retryAfterSeconds);
  return { status, body, headers, contentType: PROBLEM_CONTENT_TYPE };
}
