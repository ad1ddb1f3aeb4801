import { createHash } from 'node:crypto';
import type { NodeRequest } from '../http/reply.js';

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
    {
      rel: 'api-reference',
      href: '/docs',
      title: 'API reference',
      description: 'Swagger UI over every OpenAPI contract; sign in at the top, and "Try it out" calls this server with your token.',
    },
    {
      rel: 'graphql-explorer',
      href: '/graphql',
      title: 'GraphQL explorer',
      description: "GraphiQL over the publishing schema; sign in with a writer's email and password at the top to run queries.",
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

/**
 * The explorer's files, served under EXPLORER_ASSETS_PATH: [served name, package, file in it, content
 * type]. Build-time packages: the build copies these files into dist/vendor/ (src/server/vendored.ts).
 */
export const EXPLORER_ASSETS_PATH = '/graphql/explorer/';
export const EXPLORER_ASSETS: ReadonlyArray<readonly [string, string, string, string]> = [
  ['react.production.min.js', 'react', 'umd/react.production.min.js', 'text/javascript; charset=utf-8'],
  ['react-dom.production.min.js', 'react-dom', 'umd/react-dom.production.min.js', 'text/javascript; charset=utf-8'],
  ['graphiql.min.js', 'graphiql', 'graphiql.min.js', 'text/javascript; charset=utf-8'],
  ['graphiql.min.css', 'graphiql', 'graphiql.min.css', 'text/css; charset=utf-8'],
];

/**
 * The sign-in form of the browser pages (`/docs`, `/graphql`): it posts the name or email and password
 * to `POST /api/auth` (a user account) or `POST /v1/writers/login` (a publishing writer) and keeps the
 * access token in `window.cfsSignIn.token` (memory only), which the page's own requests then send as
 * `Authorization: Bearer …`. A served file, not an inline script (the pages' CSP is `script-src 'self'`).
 */
export const SIGN_IN_SCRIPT = `(function () {
  var state = { token: '' };
  window.cfsSignIn = state;
  function setup() {
    var form = document.getElementById('sign-in');
    if (!form) return;
    var as = form.elements.namedItem('as');
    var login = form.elements.namedItem('login');
    var password = form.elements.namedItem('password');
    var status = form.querySelector('.sign-in-status');
    function placeholder() { login.placeholder = as.value === 'writer' ? 'email' : 'name'; }
    as.addEventListener('change', placeholder);
    placeholder();
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var writer = as.value === 'writer';
      var body = writer ? { email: login.value, password: password.value } : { name: login.value, password: password.value };
      status.textContent = 'Signing in…';
      fetch(writer ? '/v1/writers/login' : '/api/auth', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
        .then(function (response) {
          return response.json().then(function (json) { return { ok: response.ok, status: response.status, json: json || {} }; }, function () { return { ok: false, status: response.status, json: {} }; });
        })
        .then(function (reply) {
          if (!reply.ok || !reply.json.accessToken) {
            state.token = '';
            form.setAttribute('data-signed-in', 'false');
            status.textContent = 'Sign-in failed (' + reply.status + ')' + (reply.json.detail || reply.json.message ? ': ' + (reply.json.detail || reply.json.message) : '');
            return;
          }
          state.token = reply.json.accessToken;
          var user = reply.json.user || {};
          password.value = '';
          form.setAttribute('data-signed-in', 'true');
          status.textContent = 'Signed in as ' + (user.name || user.email || login.value) + ': this page sends Authorization: Bearer <token>.';
        }, function (error) { status.textContent = 'Sign-in failed: ' + error.message; });
    });
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', setup); else setup();
})();
`;

/** The sign-in form (SIGN_IN_SCRIPT): `as` is the account kind selected first. */
export function signInForm(as: 'user' | 'writer'): string {
  const option = (value: string, label: string) => `<option value="${value}"${value === as ? ' selected' : ''}>${label}</option>`;
  return `<form id="sign-in" class="sign-in" data-signed-in="false">
<select name="as" aria-label="account">${option('user', 'User account (POST /api/auth)')}${option('writer', 'Publishing writer (POST /v1/writers/login)')}</select>
<input name="login" required aria-label="name or email" autocomplete="username">
<input name="password" type="password" required aria-label="password" placeholder="password" autocomplete="current-password">
<button type="submit">Sign in</button>
<span class="sign-in-status" role="status">Not signed in.</span>
</form>`;
}

/** The form's look, shared by both pages (an inline style allowed by hash on the explorer, docs.css on /docs). */
export const SIGN_IN_STYLE =
  '.sign-in{display:flex;flex-wrap:wrap;gap:6px;align-items:center;font:14px system-ui,sans-serif;padding:6px 12px;background:#f4f4f4;border-bottom:1px solid #ddd}.sign-in input{width:11rem}.sign-in-status{color:#555}';

/**
 * GraphiQL, started on the schema the server serves as SDL (no introspection call, so the page loads
 * without a token and without an error); the queries the user runs go to `/graphql` with the headers
 * the user types in the Headers tab, and the token of the sign-in form above it unless those name
 * an Authorization header themselves.
 */
export const EXPLORER_SCRIPT = `(function () {
  var root = ReactDOM.createRoot(document.getElementById('graphiql'));
  var base = GraphiQL.createFetcher({ url: window.location.origin + '/graphql' });
  function fetcher(params, options) {
    var headers = Object.assign({}, options && options.headers);
    var named = Object.keys(headers).some(function (name) { return name.toLowerCase() === 'authorization'; });
    if (!named && window.cfsSignIn && window.cfsSignIn.token) headers.Authorization = 'Bearer ' + window.cfsSignIn.token;
    return base(params, Object.assign({}, options, { headers: headers }));
  }
  fetch('/graphql/schema.graphql')
    .then(function (response) { return response.text(); })
    .then(function (sdl) {
      root.render(React.createElement(GraphiQL, {
        fetcher: fetcher,
        schema: GraphiQL.GraphQL.buildSchema(sdl),
        defaultEditorToolsVisibility: 'headers',
        shouldPersistHeaders: false,
        defaultQuery: '# Sign in above as a writer, then\\n# run this query (Ctrl-Enter).\\n{\\n  topics {\\n    items { _id title }\\n  }\\n}\\n'
      }));
    });
})();
`;

const EXPLORER_STYLE = `html,body{height:100%;margin:0}body{display:flex;flex-direction:column}#graphiql{flex:1;min-height:0}${SIGN_IN_STYLE}`;

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
${signInForm('writer')}
<div id="graphiql">Loading the GraphQL explorer…</div>
<script src="${EXPLORER_ASSETS_PATH}sign-in.js"></script>
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
