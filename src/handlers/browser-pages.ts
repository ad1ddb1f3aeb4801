import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { NodeRequest } from '../http/rest-api.js';

/**
 * The pages a person opens in a browser, beside the APIs: the landing page `/` and the GraphQL
 * explorer (GraphiQL, from the graphiql npm package, no CDN). Each has a strict CSP: scripts and styles
 * from this server only, an inline block only by its hash, never 'unsafe-inline' or 'unsafe-eval'.
 */

/** `sha256-…` of an inline block, as a CSP source expression. */
function cspHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** One entry point of the landing page, in its HTML and in its JSON (`Accept: application/json`). */
export interface EntryPoint {
  rel: string;
  href: string;
  title: string;
  description: string;
}

export function entryPoints(options: { metricsEnabled: boolean }): EntryPoint[] {
  return [
    { rel: 'api-reference', href: '/docs', title: 'API reference', description: 'Swagger UI over every OpenAPI contract; "Try it out" calls this server.' },
    {
      rel: 'graphql-explorer',
      href: '/graphql',
      title: 'GraphQL explorer',
      description: 'GraphiQL over the publishing schema; add an Authorization header to run queries.',
    },
    { rel: 'webhook-inspector', href: '/inspect', title: 'Webhook inspector', description: 'Opens a new capture URL and its live page.' },
    {
      rel: 'contracts',
      href: '/openapi',
      title: 'Contracts',
      description: 'The OpenAPI documents (YAML and JSON) and the GraphQL SDL this server implements.',
    },
    { rel: 'health', href: '/healthz', title: 'Health', description: 'The process is up.' },
    { rel: 'readiness', href: '/readyz', title: 'Readiness', description: 'The database answers and migrations are done.' },
    ...(options.metricsEnabled ? [{ rel: 'metrics', href: '/metrics', title: 'Metrics', description: 'Prometheus text format.' }] : []),
  ];
}

const LANDING_STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem;color:#222}h1{font-size:1.5rem}dt{margin-top:.8rem}dt a{font-weight:600}dd{margin:0;color:#555}';

/** The landing page: what this server is and where to go from here. */
export function landingPage(serviceName: string, links: EntryPoint[]): { html: string; csp: string } {
  const items = links.map(
    (link) =>
      `<dt><a href="${link.href}" rel="${link.rel}">${escapeHtml(link.title)}</a> <code>${escapeHtml(link.href)}</code></dt>\n<dd>${escapeHtml(link.description)}</dd>`,
  );
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(serviceName)}</title>
<style>${LANDING_STYLE}</style>
</head>
<body>
<h1>${escapeHtml(serviceName)}</h1>
<p>A contract-first server: the User Account API (<code>/api</code>), the cloud API over gRPC, gRPC-Web and Connect, the Article Publishing API (<code>/v1</code>, <code>/graphql</code>) and a webhook inspector, on one port.</p>
<dl>
${items.join('\n')}
</dl>
</body>
</html>
`;
  const csp = `default-src 'none'; style-src ${cspHash(LANDING_STYLE)}; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
  return { html, csp };
}

/** Whether a request to `/graphql` is a browser opening the page rather than a GraphQL-over-HTTP call. */
export function wantsGraphqlExplorer(req: NodeRequest): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  if (new URL(req.url ?? '/', 'http://localhost').searchParams.has('query')) return false;
  return /\btext\/html\b/.test(String(req.headers.accept ?? ''));
}

/** The explorer's files, served under EXPLORER_ASSETS_PATH: [served name, package, file in it, content type]. */
export const EXPLORER_ASSETS_PATH = '/graphql/explorer/';
export const EXPLORER_ASSETS: ReadonlyArray<readonly [string, string, string, string]> = [
  ['react.production.min.js', 'react', 'umd/react.production.min.js', 'text/javascript; charset=utf-8'],
  ['react-dom.production.min.js', 'react-dom', 'umd/react-dom.production.min.js', 'text/javascript; charset=utf-8'],
  ['graphiql.min.js', 'graphiql', 'graphiql.min.js', 'text/javascript; charset=utf-8'],
  ['graphiql.min.css', 'graphiql', 'graphiql.min.css', 'text/css; charset=utf-8'],
];

/** Where an npm package's file is, from this module (so the bundle and the per-file build agree). */
export function packageFile(name: string, file: string): string {
  return join(dirname(createRequire(import.meta.url).resolve(`${name}/package.json`)), file);
}

/**
 * GraphiQL, started on the schema the server serves as SDL (no introspection call, so the page loads
 * without a token and without an error); the queries the user runs go to `/graphql` with the headers
 * the user types in the Headers tab.
 */
export const EXPLORER_SCRIPT = `(function () {
  var root = ReactDOM.createRoot(document.getElementById('graphiql'));
  fetch('/graphql/schema.graphql')
    .then(function (response) { return response.text(); })
    .then(function (sdl) {
      root.render(React.createElement(GraphiQL, {
        fetcher: GraphiQL.createFetcher({ url: window.location.origin + '/graphql' }),
        schema: GraphiQL.GraphQL.buildSchema(sdl),
        defaultEditorToolsVisibility: 'headers',
        shouldPersistHeaders: false,
        defaultQuery: '# The publishing API answers signed-in callers: sign in (POST /v1/writers/login) and put\\n# {"Authorization": "Bearer <accessToken>"} in the Headers tab below.\\n{\\n  topics {\\n    items { _id title }\\n  }\\n}\\n'
      }));
    });
})();
`;

const EXPLORER_STYLE = 'html,body,#graphiql{height:100%;margin:0}';

/** The explorer page; its only inline block is a style, allowed by hash. */
export function explorerPage(): { html: string; csp: string } {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>GraphQL explorer</title>
<link rel="stylesheet" href="${EXPLORER_ASSETS_PATH}graphiql.min.css">
<style>${EXPLORER_STYLE}</style>
</head>
<body>
<div id="graphiql">Loading the GraphQL explorer…</div>
<script src="${EXPLORER_ASSETS_PATH}react.production.min.js"></script>
<script src="${EXPLORER_ASSETS_PATH}react-dom.production.min.js"></script>
<script src="${EXPLORER_ASSETS_PATH}graphiql.min.js"></script>
<script src="${EXPLORER_ASSETS_PATH}explorer.js"></script>
</body>
</html>
`;
  // GraphiQL's fonts are data: URLs inside its stylesheet.
  const csp = `default-src 'none'; script-src 'self'; style-src 'self' ${cspHash(EXPLORER_STYLE)}; font-src 'self' data:; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
  return { html, csp };
}
