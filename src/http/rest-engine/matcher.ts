import type { Operation } from 'openapi-backend';

/** Segment patterns of the string formats a root template may be narrowed by (see `pathPattern`). */
const FORMAT_PATTERNS: Record<string, string> = {
  uuid: '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}',
};

/**
 * openapi-backend's `router.matchOperation` (apiRoot `/`) with each path's pattern compiled once and
 * the specificity order computed once: an exact path with the method wins; otherwise, among the
 * operations whose path pattern matches, the most specific (longest path without its templates)
 * whose method matches; none: undefined. Its version compiled a RegExp per operation per request.
 * One deliberate difference, `pathPattern`'s: a path whose first segment is a template claims only
 * what its parameter's format allows.
 */
export function operationMatcher(operations: Operation[]): (method: string, normalizedPath: string) => Operation | undefined {
  const patterns = operations.map((operation) => ({ operation, pattern: new RegExp(`^${pathPattern(operation)}$`) }));
  // lodash's orderBy (stable), by the length of the path without its templates, longest first.
  const bySpecificity = patterns
    .map((entry, index) => ({ ...entry, index, length: entry.operation.path.replace(/\{.*?\}/g, '').length }))
    .sort((a, b) => b.length - a.length || a.index - b.index);
  // Exact paths by path, then method: the first operation listed wins, as `find` over the list would.
  const exact = new Map<string, Map<string, Operation>>();
  for (const operation of operations) {
    let byMethod = exact.get(operation.path);
    if (!byMethod) exact.set(operation.path, (byMethod = new Map()));
    if (!byMethod.has(operation.method)) byMethod.set(operation.method, operation);
  }
  return (method, normalizedPath) => {
    const lower = LOWER_METHODS[method] ?? method.trim().toLowerCase();
    const found = exact.get(normalizedPath)?.get(lower);
    if (found) return found;
    for (const { operation, pattern } of bySpecificity) {
      if (operation.method === lower && pattern.test(normalizedPath)) return operation;
    }
    return undefined;
  };
}

/**
 * The path template as a pattern, each `{name}` one segment. A template as the first segment
 * (`/{routeId}`, webhook capture) would otherwise claim every path of the server (`/healthz`, other
 * APIs' paths); there its parameter's format (`uuid`) narrows the segment, so the contract alone says
 * which paths are its own. Deeper templates keep openapi-backend's rule: a malformed id there still
 * reaches the validator, which names it (400) or answers 404.
 */
function pathPattern(operation: Operation): string {
  const pattern = operation.path.replace(/\{.*?\}/g, '[^/]+');
  const root = /^\/\{([^}]+)\}/.exec(operation.path);
  if (!root) return pattern;
  const parameter = (operation.parameters ?? []).find((candidate) => 'in' in candidate && candidate.in === 'path' && candidate.name === root[1]);
  const format = parameter && 'schema' in parameter ? (parameter.schema as { format?: unknown } | undefined)?.format : undefined;
  const narrowed = typeof format === 'string' ? FORMAT_PATTERNS[format] : undefined;
  return narrowed ? `/${narrowed}${pattern.slice('/[^/]+'.length)}` : pattern;
}

/** The request methods as a client sends them, lowercased as the operations name them (no string per request). */
const LOWER_METHODS: Record<string, string> = Object.assign(Object.create(null) as Record<string, string>, {
  GET: 'get',
  HEAD: 'head',
  POST: 'post',
  PUT: 'put',
  PATCH: 'patch',
  DELETE: 'delete',
  OPTIONS: 'options',
  TRACE: 'trace',
});

/** Already normal: starts with one slash, no query, no trailing slash, no space at either end. */
const NORMAL_PATH = /^\/(?!\/)[^?]*[^/?\s]$/;

/** openapi-backend's path normalisation for matching (apiRoot `/`, trailing slashes ignored). */
export function normalizePath(rawPath: string): string {
  // Most request paths are already normal: they come back as they are, with no copies made.
  return NORMAL_PATH.test(rawPath) || rawPath === '/' ? rawPath : normalizeAnyPath(rawPath);
}

/** The general rule `normalizePath` applies to a path that is not already normal (exported for its parity test). */
export function normalizeAnyPath(rawPath: string): string {
  let path = rawPath.trim() || '';
  if (!path.startsWith('/')) path = `/${path}`;
  path = (path.split('?')[0] ?? '').trim();
  if (path.startsWith('/')) path = path.replace(/^\/\/?/, '/');
  while (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  return path;
}

export interface RequestParts {
  /** The path parameters of a normalised path (bath-es5's parse, as openapi-backend uses it), or null when it does not fit. */
  pathParameters(normalizedPath: string): Record<string, string> | null;
  headerOrCookieParameters: boolean;
}

export function requestPartsOf(operation: Operation): RequestParts {
  const names = (operation.path.match(/\{[A-Za-z0-9_-]+\}/g) ?? []).map((name) => name.slice(1, -1));
  const pattern = new RegExp(`^${operation.path.replace(/\{[A-Za-z0-9_-]+\}/g, '([^\\/]*)')}$`);
  const parameters = (operation.parameters ?? []) as Array<{ in?: string }>;
  return {
    headerOrCookieParameters: parameters.some((parameter) => parameter.in === 'header' || parameter.in === 'cookie'),
    pathParameters(normalizedPath) {
      const found = pattern.exec(normalizedPath);
      if (!found) return null;
      const params: Record<string, string> = {};
      for (let index = 0; index < names.length; index++) {
        const name = names[index] ?? '';
        const raw = found[index + 1] ?? '';
        const value = raw.includes('%') ? decodeURIComponent(raw) : raw;
        // A name used twice must carry one value.
        if (name in params && params[name] !== value) return null;
        params[name] = value;
      }
      return params;
    },
  };
}
