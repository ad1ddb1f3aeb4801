import type { Operation, OpenAPIBackend } from 'openapi-backend';
import type { ErrorObject } from 'ajv';
import type { NodeRequest } from '../reply.js';
import { ContractRefusal } from './contract-refusal.js';

/**
 * openapi-backend's `validateRequest` for a request without query string or body to an operation
 * without header or cookie parameters: the same compiled validators over the same object (path
 * parameters, an empty query, the headers, no cookies), and the same result shape.
 */
export function validateParameters(
  api: OpenAPIBackend,
  operation: Operation,
  params: Record<string, string>,
  headers: NodeRequest['headers'],
): { errors: ErrorObject[] | null; coerced: { params?: unknown; query?: unknown } } {
  const validators = api.validator.getRequestValidatorsForOperation(operation.operationId ?? '') ?? [];
  const parameters: Record<string, unknown> = { path: params, query: {}, header: headers, cookie: {} };
  if (headers['content-type'] === 'application/json') parameters.requestBody = undefined;
  let errors: ErrorObject[] | null = null;
  const coerced: { params?: unknown; query?: unknown } = {};
  for (const validate of validators) {
    validate(parameters);
    if (validate.errors) (errors ??= []).push(...validate.errors);
    else {
      coerced.query = parameters.query;
      coerced.params = parameters.path;
    }
  }
  return { errors, coerced };
}

/**
 * Drops the query parameters an operation does not declare, so they are ignored rather than
 * rejected: clients add cache busters and tracking parameters, a newer client may send a parameter
 * an older server does not know yet, and the contracts document no 400 for operations without query
 * parameters. Declared parameters are still validated strictly.
 */
export function withoutUnknownParameters(query: string, declared: Set<string> | undefined): string {
  return query
    .split('&')
    .filter((pair) => {
      const raw = (pair.split('=', 1)[0] ?? '').replace(/\+/g, ' ');
      let name: string;
      try {
        name = decodeURIComponent(raw);
      } catch {
        return false;
      }
      return declared?.has(name) ?? false;
    })
    .join('&');
}

/**
 * A path parameter outside its schema (an over-long id, a malformed UUID) names no resource that can
 * exist: on an operation that documents 404 but no 400, that is what the client gets.
 */
export function onlyPathInvalid(errors: ErrorObject[], operation: Operation): boolean {
  const responses = operation.responses ?? {};
  return errors.length > 0 && '404' in responses && !('400' in responses) && errors.every((error) => error.instancePath.startsWith('/path/'));
}

/** The dotted path of the first string holding a NUL character, or undefined. */
function nulPath(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  // for-in over own keys: no entry arrays per request (params and query are checked on every call).
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const found = nulPath((value as Record<string, unknown>)[key], path === '' ? key : `${path}.${key}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * PostgreSQL cannot store a NUL character in text, so no contract value may hold one: a path
 * parameter names no resource (404 where the operation documents no 400), anything else is a 400
 * naming the field.
 */
export function rejectNulCharacters(call: { params: unknown; query: unknown; body: unknown }, operation: Operation): void {
  const responses = operation.responses ?? {};
  const inPath = nulPath(call.params);
  if (inPath !== undefined && '404' in responses && !('400' in responses)) throw new ContractRefusal('not_found');
  const field = inPath ?? nulPath(call.query) ?? nulPath(call.body);
  if (field !== undefined)
    throw new ContractRefusal('invalid_argument', { violations: [{ field: field || 'body', message: 'must not contain NUL characters' }] });
}
