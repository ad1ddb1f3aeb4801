/**
 * What both contract fuzzers share (scripts/fuzz-contract.ts, one operation at a time, and
 * scripts/fuzz/stateful.ts, sequences along the documents' links): the operations of an OpenAPI
 * document, sending one request, and the contract checks of one answer.
 */
import type { App } from '../../src/server/build.js';
import { expectMatchesContract } from '../../test/support/app.js';
import { resolveRefs, type Schema } from '../../test/contract/schema-arbitrary.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head'] as const;

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: Schema;
}

export interface MediaType {
  schema?: Schema;
}

export interface OperationObject {
  operationId?: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, MediaType> };
  security?: Array<Record<string, string[]>>;
  responses?: Record<string, { content?: Record<string, MediaType> }>;
}

export interface SecurityScheme {
  type: string;
  scheme?: string;
  in?: string;
  name?: string;
}

export interface Document {
  paths?: Record<string, Record<string, OperationObject | Parameter[]> & { parameters?: Parameter[] }>;
  security?: Array<Record<string, string[]>>;
  components?: { securitySchemes?: Record<string, SecurityScheme> };
}

/** One operation of one contract, with path-level parameters merged in. */
export interface FuzzOperation {
  contract: string;
  method: string;
  template: string;
  id: string;
  parameters: Parameter[];
  body?: { required: boolean; content: Record<string, MediaType> };
  security: Array<Record<string, string[]>>;
  responses: Record<string, { content?: Record<string, MediaType> }>;
}

/** Every operation of a document, `$ref`s resolved. */
export function operationsOf(contract: string, raw: unknown): FuzzOperation[] {
  const document = resolveRefs(raw, raw) as Document;
  const operations: FuzzOperation[] = [];
  for (const [template, item] of Object.entries(document.paths ?? {})) {
    const shared = item.parameters ?? [];
    for (const method of METHODS) {
      const operation = item[method] as OperationObject | undefined;
      if (!operation) continue;
      const own = operation.parameters ?? [];
      const parameters = [...shared.filter((parameter) => !own.some((mine) => mine.name === parameter.name && mine.in === parameter.in)), ...own];
      operations.push({
        contract,
        method: method.toUpperCase(),
        template,
        id: operation.operationId ?? `${method.toUpperCase()} ${template}`,
        parameters,
        body: operation.requestBody?.content ? { required: operation.requestBody.required ?? false, content: operation.requestBody.content } : undefined,
        security: operation.security ?? document.security ?? [],
        responses: operation.responses ?? {},
      });
    }
  }
  return operations;
}

/** Percent-encodes every byte but the unreserved ones (a `/` inside a value stays a segment separator). */
export function encodeSegment(value: string): string {
  return value
    .split('/')
    .map((segment) =>
      [...Buffer.from(segment, 'utf8')]
        .map((byte) =>
          /[A-Za-z0-9\-._~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`,
        )
        .join(''),
    )
    .join('/');
}

export interface Sent {
  status: number;
  contentType: string;
  text: string;
  headers: Headers;
}

export async function send(
  url: string,
  method: string,
  target: string,
  headers: Record<string, string>,
  body: { contentType?: string; bytes: string | Uint8Array } | undefined,
): Promise<Sent> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 10_000);
  try {
    const response = await fetch(`${url}${target}`, { method, headers, body: body?.bytes, redirect: 'manual', signal: controller.signal });
    const contentType = response.headers.get('content-type') ?? '';
    let text = '';
    // An event stream never ends on its own: its headers are the answer.
    if (contentType.startsWith('text/event-stream')) await response.body?.cancel();
    else text = await response.text();
    return { status: response.status, contentType, text, headers: response.headers };
  } finally {
    clearTimeout(timer);
  }
}

/** Content types the document promises for `status` (undefined: the response documents no body). */
function documentedMediaTypes(operation: FuzzOperation, status: number): string[] | undefined {
  const response = operation.responses[String(status)] ?? operation.responses.default;
  if (!response?.content) return undefined;
  // Opaque bytes (`format: binary`) pass through with whatever type they were stored with.
  if (Object.values(response.content).some((media) => media.schema?.format === 'binary')) return ['*/*'];
  return Object.keys(response.content);
}

function mediaMatches(actual: string, documented: string): boolean {
  if (documented === '*/*') return true;
  if (documented.endsWith('/*')) return actual.startsWith(documented.slice(0, -1));
  return actual === documented;
}

/** The contract checks of one answer; throws with what is wrong. */
export function checkAnswer(app: App, operation: FuzzOperation, method: string, target: string, answer: Sent): void {
  if (answer.status >= 500) throw new Error(`answered ${answer.status} (a 5xx): ${answer.text.slice(0, 500)}`);
  const rest = app.restApis[operation.contract];
  if (!rest) throw new Error(`the server has no REST engine for ${operation.contract}`);
  const matched = rest.match(method, target.split('?')[0] ?? target);
  const mediaType = answer.contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (matched && matched.operationId === operation.id && answer.text !== '') {
    const documented = documentedMediaTypes(operation, answer.status);
    if (documented && !documented.some((candidate) => mediaMatches(mediaType, candidate))) {
      throw new Error(`answered ${answer.status} with content type ${answer.contentType}, the contract documents ${documented.join(', ')}`);
    }
  }
  let body: unknown = answer.text;
  if (/json/.test(mediaType) && answer.text !== '') {
    try {
      body = JSON.parse(answer.text);
    } catch {
      throw new Error(`answered ${answer.status} ${answer.contentType} that is not JSON: ${answer.text.slice(0, 200)}`);
    }
  }
  // Only this contract's engine: a catch-all path of another contract must not claim the request.
  const scoped = { ...app, restApis: { [operation.contract]: rest } } as App;
  expectMatchesContract(scoped, method, target, { status: answer.status, headers: answer.headers, text: answer.text, body });
}
