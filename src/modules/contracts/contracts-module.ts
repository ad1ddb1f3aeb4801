import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../server/paths.js';
import { acceptsGzip, vendoredBytes, vendoredFile, type VendoredBytes } from '../../server/vendored.js';
import { loadContractDocuments } from '../../http/contract-documents.js';
import { sendReply, type NodeRequest, type NodeResponse } from '../../http/reply.js';
import { AppError } from '../../errors.js';
import { renderUserApiError } from '../../handlers/users.js';
import { GET_HEAD } from '../../server/route-table.js';
import type { ServerModule } from '../../server/module.js';
import { reflectionServices } from '../../handlers/grpc-reflection.js';
import { EXPLORER_ASSETS, EXPLORER_ASSETS_PATH, EXPLORER_SCRIPT, SIGN_IN_SCRIPT, SIGN_IN_STYLE, entryPoints, landingPage, signInForm } from '../../handlers/browser-pages.js';

/**
 * No inline script, nothing from another origin: the reference page runs on assets served here. The one
 * inline style Swagger UI writes (the <style> of its top bar's SVG logo) is allowed by its hash; a
 * new swagger-ui-dist that changes it shows as a CSP violation in test/runtime/browser-pages.test.ts.
 */
const SWAGGER_LOGO_STYLE = '.logo_small_svg__cls-2{fill:#fff}.logo_small_svg__cls-3{fill:#85ea2d}';
const DOCS_CSP = `default-src 'none'; script-src 'self'; style-src 'self' 'sha256-${createHash('sha256').update(SWAGGER_LOGO_STYLE).digest('base64')}'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

interface Resource {
  readonly body: Buffer;
  contentType: string;
  etag: string;
  csp?: string;
  /** The body gzip'd, sent to a client that accepts it (the browser pages' precompressed files). */
  gzip?: Buffer;
}

/** One published OpenAPI document, as listed by `GET /openapi`. */
export interface PublishedDocument {
  name: string;
  title: string;
  version: string;
  yaml: string;
  json: string;
}

function resource(body: string | Buffer, contentType: string, csp?: string): Resource {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  return { body: bytes, contentType, etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`, csp };
}

/**
 * A browser page's build-time file: served gzip'd when the build precompressed it and the client
 * accepts gzip, else as is (decompressed on first use when only the `.gz` was shipped). Its ETag is
 * the gzip'd bytes' hash; the gzip'd representation's carries a `-gzip` suffix, so neither validates the other.
 */
function vendoredResource(bytes: VendoredBytes, contentType: string): Resource {
  const { gzip } = bytes;
  if (!gzip) return resource(bytes.identity(), contentType);
  const etag = `"${createHash('sha256').update(gzip).digest('base64url').slice(0, 27)}"`;
  return {
    get body() {
      return bytes.identity();
    },
    contentType,
    etag,
    gzip,
  };
}

/**
 * A resource made on its first request: the Swagger UI bundle (~1.5 MB to read and hash) and the
 * JSON renderings are not needed to be ready, and most servers never serve them.
 */
function once(make: () => Resource): () => Resource {
  let made: Resource | undefined;
  return () => (made ??= make());
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A document whose every operation is deprecated (the publishing `/v1` API): listed last on /docs. */
function isDeprecated(document: unknown): boolean {
  const paths = isObject(document) && isObject(document.paths) ? Object.values(document.paths) : [];
  const operations = paths.flatMap((item) => (isObject(item) ? Object.entries(item).filter(([key, value]) => key !== 'parameters' && isObject(value) && 'responses' in value) : []));
  return operations.length > 0 && operations.every(([, operation]) => isObject(operation) && operation.deprecated === true);
}

/**
 * The document as /docs shows it: Swagger UI fills "Try it out" with each parameter's example and
 * default, so a first Execute sent filters nobody typed (and found nothing). Here a parameter keeps its
 * example and default in its description only, and the request carries what the user typed.
 */
function withoutPrefilledParameters(document: unknown): unknown {
  const copy = structuredClone(document);
  const strip = (parameter: unknown) => {
    if (!isObject(parameter) || '$ref' in parameter) return;
    const schema = isObject(parameter.schema) ? parameter.schema : {};
    const example = parameter.example ?? schema.example;
    const notes = [
      ...(example === undefined ? [] : [`Example: \`${String(example)}\`.`]),
      ...(schema.default === undefined ? [] : [`When absent: \`${String(schema.default)}\`.`]),
    ];
    delete parameter.example;
    delete parameter.examples;
    delete schema.example;
    delete schema.default;
    if (notes.length > 0) parameter.description = [parameter.description, ...notes].filter(Boolean).join(' ');
  };
  if (!isObject(copy)) return copy;
  const components = isObject(copy.components) && isObject(copy.components.parameters) ? Object.values(copy.components.parameters) : [];
  components.forEach(strip);
  for (const item of isObject(copy.paths) ? Object.values(copy.paths) : []) {
    if (!isObject(item)) continue;
    for (const value of [item, ...Object.values(item)]) if (isObject(value) && Array.isArray(value.parameters)) value.parameters.forEach(strip);
  }
  return copy;
}

/**
 * The contracts, served by the server that implements them (docs/contracts.md): every OpenAPI document as
 * YAML and JSON (`/openapi/<name>.yaml|json`, listed at `/openapi`), the GraphQL SDL
 * (`/graphql/schema.graphql`, and `/graphql/<name>.graphql` per file), an API reference page at
 * `/docs` (Swagger UI from the swagger-ui-dist npm package, no CDN, strict CSP), and gRPC server
 * reflection for every RPC service on the server.
 */
export function contractsModule(options: { serviceName: string; metricsEnabled: boolean }): ServerModule {
  const resources = new Map<string, () => Resource>();
  const set = (path: string, made: Resource) => resources.set(path, () => made);
  const documents: PublishedDocument[] = [];
  const docsUrls: Array<{ url: string; name: string; deprecated: boolean }> = [];
  // The same parsed documents the REST engines serve (read once per process, contract-documents.ts).
  for (const { name, text, document } of loadContractDocuments()) {
    const { info } = document as { info?: { title?: string; version?: string } };
    documents.push({ name, title: info?.title ?? name, version: info?.version ?? '', yaml: `/openapi/${name}.yaml`, json: `/openapi/${name}.json` });
    set(`/openapi/${name}.yaml`, resource(text, 'application/yaml; charset=utf-8'));
    resources.set(`/openapi/${name}.json`, once(() => resource(`${JSON.stringify(document, null, 2)}\n`, 'application/json; charset=utf-8')));
    resources.set(`/docs/assets/openapi/${name}.json`, once(() => resource(`${JSON.stringify(withoutPrefilledParameters(document))}\n`, 'application/json; charset=utf-8')));
    const deprecated = isDeprecated(document);
    docsUrls.push({ url: `/docs/assets/openapi/${name}.json`, name: `${info?.title ?? name} (${name})${deprecated ? ' — deprecated' : ''}`, deprecated });
  }
  set('/openapi', resource(`${JSON.stringify({ documents }, null, 2)}\n`, 'application/json; charset=utf-8'));

  const graphqlDir = join(ROOT, 'contracts/graphql');
  const schemas = existsSync(graphqlDir) ? readdirSync(graphqlDir).filter((name) => name.endsWith('.graphql')).sort() : [];
  for (const [position, file] of schemas.entries()) {
    const sdl = once(() => resource(readFileSync(join(graphqlDir, file)), 'text/plain; charset=utf-8'));
    resources.set(`/graphql/${file}`, sdl);
    // The one schema of `/graphql` (contracts/graphql holds a single SDL file); the first one if more ever appear.
    if (position === 0) resources.set('/graphql/schema.graphql', sdl);
  }

  for (const [file, type] of [
    ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
    ['swagger-ui-standalone-preset.js', 'text/javascript; charset=utf-8'],
    ['swagger-ui.css', 'text/css; charset=utf-8'],
    ['favicon-32x32.png', 'image/png'],
  ] as const) {
    resources.set(`/docs/assets/${file}`, once(() => vendoredResource(vendoredBytes('swagger-ui-dist', file), type)));
  }
  // Browsers ask every origin for one; a 404 there is an error in every page's console.
  resources.set('/favicon.ico', once(() => resource(readFileSync(vendoredFile('swagger-ui-dist', 'favicon-32x32.png')), 'image/png')));
  // Current APIs first, the page opening on the first of them; deprecated ones last.
  const urls = [...docsUrls.filter((entry) => !entry.deprecated), ...docsUrls.filter((entry) => entry.deprecated)].map(({ url, name }) => ({ url, name }));
  set(
    '/docs/assets/docs.js',
    resource(
      `window.addEventListener('load', function () {\n  window.ui = SwaggerUIBundle({\n    urls: ${JSON.stringify(urls)},\n    'urls.primaryName': ${JSON.stringify(urls[0]?.name ?? '')},\n    dom_id: '#swagger-ui',\n    deepLinking: true,\n    validatorUrl: null,\n    // "Try it out" calls the server that serves this page, whatever the documents' servers say.\n    // and with the token of the sign-in form (sign-in.js) unless Authorize set a header itself.\n    requestInterceptor: function (request) {\n      var url = new URL(request.url, window.location.href);\n      request.url = window.location.origin + url.pathname + url.search;\n      var headers = request.headers || (request.headers = {});\n      var named = Object.keys(headers).some(function (name) { return name.toLowerCase() === 'authorization'; });\n      if (!named && window.cfsSignIn && window.cfsSignIn.token) headers.Authorization = 'Bearer ' + window.cfsSignIn.token;\n      return request;\n    },\n    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],\n    layout: 'StandaloneLayout'\n  });\n});\n`,
      'text/javascript; charset=utf-8',
    ),
  );
  set(
    '/docs/assets/docs.css',
    resource(
      `.contracts-nav { font: 14px sans-serif; padding: 8px 16px; background: #f4f4f4; border-bottom: 1px solid #ddd; }\n.contracts-nav a { margin-right: 12px; }\n${SIGN_IN_STYLE}\n`,
      'text/css; charset=utf-8',
    ),
  );
  set('/docs/assets/sign-in.js', resource(SIGN_IN_SCRIPT, 'text/javascript; charset=utf-8'));
  const links = [
    ...documents.flatMap((document) => [`<a href="${document.yaml}">${escapeHtml(document.name)}.yaml</a>`, `<a href="${document.json}">${escapeHtml(document.name)}.json</a>`]),
    ...schemas.map((file) => `<a href="/graphql/${escapeHtml(file)}">${escapeHtml(file)} (GraphQL SDL)</a>`),
  ];
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>API reference</title>
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="stylesheet" href="/docs/assets/docs.css">
</head>
<body>
<nav class="contracts-nav">Contracts: ${links.join(' ')} · gRPC: server reflection (<code>buf curl --list-methods</code>)</nav>
${signInForm('user')}
<div id="swagger-ui"></div>
<script src="/docs/assets/sign-in.js"></script>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
<script src="/docs/assets/docs.js"></script>
</body>
</html>
`;
  set('/docs', resource(page, 'text/html; charset=utf-8', DOCS_CSP));

  for (const [file, pkg, inPackage, type] of EXPLORER_ASSETS) {
    resources.set(`${EXPLORER_ASSETS_PATH}${file}`, once(() => vendoredResource(vendoredBytes(pkg, inPackage), type)));
  }
  set(`${EXPLORER_ASSETS_PATH}explorer.js`, resource(EXPLORER_SCRIPT, 'text/javascript; charset=utf-8'));
  set(`${EXPLORER_ASSETS_PATH}sign-in.js`, resource(SIGN_IN_SCRIPT, 'text/javascript; charset=utf-8'));

  const entries = entryPoints(options);
  const landing = landingPage(options.serviceName, entries);
  set('/ (html)', resource(landing.html, 'text/html; charset=utf-8', landing.csp));
  set('/ (json)', resource(`${JSON.stringify({ name: options.serviceName, version: '1.0.0', links: entries }, null, 2)}\n`, 'application/json; charset=utf-8'));

  const serve = (req: NodeRequest, res: NodeResponse, _requestId: string, path: string): string => {
    const head = req.method === 'HEAD';
    // `/` is a page for browsers and a list of links for API clients.
    const key = path === '/' ? (/\btext\/html\b/.test(String(req.headers.accept ?? '')) ? '/ (html)' : '/ (json)') : path === '/docs/' ? '/docs' : path;
    const found = resources.get(key)?.();
    if (!found) {
      sendReply(res, renderUserApiError(new AppError('not_found', 'Not Found')), undefined, head);
      return 'contracts:unmatched';
    }
    const gzip = found.gzip && acceptsGzip(req.headers['accept-encoding']) ? found.gzip : undefined;
    const etag = gzip ? found.etag.replace(/"$/, '-gzip"') : found.etag;
    const headers: Record<string, string> = {
      etag,
      // Contracts change with a deploy: revalidate (cheap, by ETag) rather than serve a stale contract.
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'access-control-allow-origin': '*',
    };
    if (path === '/') headers.vary = 'Accept';
    if (found.gzip) headers.vary = 'Accept-Encoding';
    if (gzip) headers['content-encoding'] = 'gzip';
    if (found.csp) Object.assign(headers, { 'content-security-policy': found.csp, 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer' });
    const fresh = req.headers['if-none-match'] === etag;
    const reply = fresh ? { status: 304, headers: { ...headers, 'content-type': found.contentType } } : { status: 200, body: gzip ?? found.body, contentType: found.contentType, headers };
    sendReply(res, reply, undefined, head);
    return path;
  };

  return {
    name: 'contracts',
    routes: [
      ...['/', '/favicon.ico', '/openapi', '/docs', '/docs/'].map((path) => ({ path, methods: GET_HEAD, handle: serve })),
      ...['/openapi/', '/graphql/', '/docs/assets/'].map((prefix) => ({ prefix, methods: GET_HEAD, handle: serve })),
    ],
    rpc: reflectionServices,
  };
}
