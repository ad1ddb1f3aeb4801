import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ROOT } from '../server/paths.js';
import type { NodeRequest, NodeResponse } from '../http/rest-api.js';
import type { ServerModule } from '../server/module.js';
import { registerReflection } from './grpc-reflection.js';

/** No inline script or style, nothing from another origin: the reference page runs on assets served here. */
export const DOCS_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Resource {
  body: Buffer;
  contentType: string;
  etag: string;
  csp?: string;
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

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/**
 * The contracts, served by the server that implements them (SPEC §6): every OpenAPI document as
 * YAML and JSON (`/openapi/<name>.yaml|json`, listed at `/openapi`), the GraphQL SDL
 * (`/graphql/schema.graphql`, and `/graphql/<name>.graphql` per file), an API reference page at
 * `/docs` (Swagger UI from the swagger-ui-dist npm package, no CDN, strict CSP), and gRPC server
 * reflection for every RPC service on the server.
 */
export function contractsModule(): ServerModule {
  const resources = new Map<string, Resource>();
  const documents: PublishedDocument[] = [];
  const openapiDir = join(ROOT, 'contracts/openapi');
  for (const file of readdirSync(openapiDir).filter((name) => name.endsWith('.yaml')).sort()) {
    const name = file.replace(/\.yaml$/, '');
    const text = readFileSync(join(openapiDir, file), 'utf8');
    const parsed = parseYaml(text) as { info?: { title?: string; version?: string } };
    documents.push({ name, title: parsed.info?.title ?? name, version: parsed.info?.version ?? '', yaml: `/openapi/${name}.yaml`, json: `/openapi/${name}.json` });
    resources.set(`/openapi/${name}.yaml`, resource(text, 'application/yaml; charset=utf-8'));
    resources.set(`/openapi/${name}.json`, resource(`${JSON.stringify(parsed, null, 2)}\n`, 'application/json; charset=utf-8'));
  }
  resources.set('/openapi', resource(`${JSON.stringify({ documents }, null, 2)}\n`, 'application/json; charset=utf-8'));

  const graphqlDir = join(ROOT, 'contracts/graphql');
  const schemas = existsSync(graphqlDir) ? readdirSync(graphqlDir).filter((name) => name.endsWith('.graphql')).sort() : [];
  for (const [position, file] of schemas.entries()) {
    const sdl = resource(readFileSync(join(graphqlDir, file)), 'text/plain; charset=utf-8');
    resources.set(`/graphql/${file}`, sdl);
    // The one schema of `/graphql` (SPEC §0 has a single SDL file); the first one if more ever appear.
    if (position === 0) resources.set('/graphql/schema.graphql', sdl);
  }

  const swaggerUi = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  for (const [file, type] of [
    ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
    ['swagger-ui-standalone-preset.js', 'text/javascript; charset=utf-8'],
    ['swagger-ui.css', 'text/css; charset=utf-8'],
    ['favicon-32x32.png', 'image/png'],
  ] as const) {
    resources.set(`/docs/assets/${file}`, resource(readFileSync(join(swaggerUi, file)), type));
  }
  const urls = documents.map((document) => ({ url: document.json, name: `${document.title} (${document.name})` }));
  resources.set(
    '/docs/assets/docs.js',
    resource(
      `window.addEventListener('load', function () {\n  window.ui = SwaggerUIBundle({\n    urls: ${JSON.stringify(urls)},\n    dom_id: '#swagger-ui',\n    deepLinking: true,\n    validatorUrl: null,\n    // "Try it out" calls the server that serves this page, whatever the documents' servers say.\n    requestInterceptor: function (request) {\n      var url = new URL(request.url, window.location.href);\n      request.url = window.location.origin + url.pathname + url.search;\n      return request;\n    },\n    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],\n    layout: 'StandaloneLayout'\n  });\n});\n`,
      'text/javascript; charset=utf-8',
    ),
  );
  resources.set('/docs/assets/docs.css', resource('.contracts-nav { font: 14px sans-serif; padding: 8px 16px; background: #f4f4f4; border-bottom: 1px solid #ddd; }\n.contracts-nav a { margin-right: 12px; }\n', 'text/css; charset=utf-8'));
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
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
<script src="/docs/assets/docs.js"></script>
</body>
</html>
`;
  resources.set('/docs', resource(page, 'text/html; charset=utf-8', DOCS_CSP));

  const serve = (req: NodeRequest, res: NodeResponse, path: string): string => {
    const found = resources.get(path === '/docs/' ? '/docs' : path);
    if (!found) {
      res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ statusCode: 404, message: 'Not Found', error: 'Not Found' }));
      return 'contracts:unmatched';
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ statusCode: 405, message: 'Method Not Allowed', error: 'Method Not Allowed' }));
      return path;
    }
    const headers: Record<string, string> = {
      'content-type': found.contentType,
      etag: found.etag,
      // Contracts change with a deploy: revalidate (cheap, by ETag) rather than serve a stale contract.
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'access-control-allow-origin': '*',
    };
    if (found.csp) Object.assign(headers, { 'content-security-policy': found.csp, 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer' });
    if (req.headers['if-none-match'] === found.etag) {
      res.writeHead(304, headers);
      res.end();
      return path;
    }
    res.writeHead(200, { ...headers, 'content-length': String(found.body.length) });
    if (req.method === 'HEAD') res.end();
    else res.end(found.body);
    return path;
  };

  return {
    name: 'contracts',
    http: {
      matches: (path) => path === '/openapi' || path.startsWith('/openapi/') || path.startsWith('/graphql/') || path === '/docs' || path === '/docs/' || path.startsWith('/docs/assets/'),
      handle: (req, res) => serve(req, res, (req.url ?? '/').split('?', 1)[0] ?? '/'),
    },
    rpc: registerReflection,
  };
}
