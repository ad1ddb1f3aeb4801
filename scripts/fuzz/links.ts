/**
 * OpenAPI links, as the stateful fuzzer reads them (scripts/fuzz/stateful.ts): the links of every
 * operation's responses, and their runtime expressions evaluated against one request and its answer.
 *
 * Supported expressions (OpenAPI 3.0 §4.7.20.4): `$response.body#/json/pointer`,
 * `$request.body#/json/pointer`, `$request.path.<name>`, `$request.query.<name>`, `$statusCode`,
 * `$method`, `$url`; a string holding `{$…}` has each embedded expression replaced; anything else is
 * a constant. A link's `requestBody` that is an object or array is evaluated member by member (the
 * way Schemathesis reads it). Two extensions of this project: `x-request-body` is read as
 * `requestBody` (the server's OpenAPI 3.0 document validator, openapi-schema-validator, rejects every
 * `requestBody` value: its `anyOrExpression` oneOf matches any value twice), and `x-credential` on a
 * link names the value the linked call sends as its bearer token.
 */

/** One link of one response of one operation. */
export interface LinkSpec {
  name: string;
  from: string;
  status: string;
  operationId: string;
  parameters: Record<string, unknown>;
  requestBody?: unknown;
  credential?: string;
}

/** What an expression is evaluated against: the request sent and the answer received. */
export interface Exchange {
  method: string;
  url: string;
  path: Record<string, string>;
  query: Record<string, string>;
  requestBody: unknown;
  status: number;
  responseBody: unknown;
}

interface RawLink {
  operationId?: string;
  parameters?: Record<string, unknown>;
  requestBody?: unknown;
  'x-request-body'?: unknown;
  'x-credential'?: string;
}

/** Every link of a `$ref`-resolved document, by the operationId it starts from. */
export function linksOf(document: { paths?: Record<string, Record<string, unknown>> }): Map<string, LinkSpec[]> {
  const byOperation = new Map<string, LinkSpec[]>();
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      if (!operation || typeof operation !== 'object' || Array.isArray(operation)) continue;
      const { operationId, responses } = operation as { operationId?: string; responses?: Record<string, { links?: Record<string, RawLink> }> };
      if (!operationId) continue;
      for (const [status, response] of Object.entries(responses ?? {})) {
        for (const [name, link] of Object.entries(response.links ?? {})) {
          if (name.startsWith('x-') || !link.operationId) continue;
          const list = byOperation.get(operationId) ?? [];
          list.push({
            name,
            from: operationId,
            status,
            operationId: link.operationId,
            parameters: link.parameters ?? {},
            requestBody: link.requestBody ?? link['x-request-body'],
            credential: link['x-credential'],
          });
          byOperation.set(operationId, list);
        }
      }
    }
  }
  return byOperation;
}

function pointer(value: unknown, path: string): unknown {
  if (path === '' || path === '/') return value;
  let current = value;
  for (const raw of path.replace(/^\//, '').split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function evaluateOne(expression: string, exchange: Exchange): unknown {
  if (expression === '$statusCode') return exchange.status;
  if (expression === '$method') return exchange.method;
  if (expression === '$url') return exchange.url;
  const body = /^\$(request|response)\.body(?:#(.*))?$/.exec(expression);
  if (body) return pointer(body[1] === 'request' ? exchange.requestBody : exchange.responseBody, body[2] ?? '');
  const part = /^\$request\.(path|query)\.(.+)$/.exec(expression);
  if (part) return (part[1] === 'path' ? exchange.path : exchange.query)[part[2] ?? ''];
  throw new Error(`unsupported runtime expression ${expression}`);
}

/** A link value evaluated; `undefined` when an expression names nothing in this exchange. */
export function evaluate(value: unknown, exchange: Exchange): unknown {
  if (typeof value === 'string') {
    if (value.startsWith('$')) return evaluateOne(value, exchange);
    if (!value.includes('{$')) return value;
    let missing = false;
    const text = value.replace(/\{(\$[^}]+)\}/g, (_, expression: string) => {
      const found = evaluateOne(expression, exchange);
      if (found === undefined) missing = true;
      return String(found);
    });
    return missing ? undefined : text;
  }
  if (Array.isArray(value)) {
    const items = value.map((item) => evaluate(item, exchange));
    return items.includes(undefined) ? undefined : items;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).map(([key, member]) => [key, evaluate(member, exchange)] as const);
    return entries.some(([, member]) => member === undefined) ? undefined : Object.fromEntries(entries);
  }
  return value;
}
