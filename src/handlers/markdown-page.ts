import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ROOT } from '../server/paths.js';
import { VENDOR_DIR } from '../server/vendored.js';

interface MarkdownRenderer {
  render(source: string): string;
}
type MarkdownItFactory = (options: { html: boolean; linkify: boolean }) => MarkdownRenderer;

/**
 * markdown-it: the build's own bundle of it (dist/vendor/markdown-it/index.cjs, scripts/build.mjs) in
 * a built server, whose production install has no GraphiQL packages; in a checkout, the copy the
 * GraphiQL packages bring (one documentation page does not justify a dependency of its own).
 * Undefined when none is found, and the page stays markdown.
 */
function loadMarkdownIt(): MarkdownItFactory | undefined {
  const load = [
    () => createRequire(import.meta.url)(join(VENDOR_DIR, 'markdown-it/index.cjs')),
    ...[`${ROOT}node_modules/@graphiql/react/package.json`, `${ROOT}package.json`].map((from) => () => createRequire(from)('markdown-it')),
  ];
  for (const attempt of load) {
    try {
      return attempt() as MarkdownItFactory;
    } catch {
      // not there: the next place, else none
    }
  }
  return undefined;
}

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}' +
  'pre,code{font-family:ui-monospace,monospace;font-size:.9em}pre{background:#f4f4f4;padding:.75rem;overflow-x:auto}' +
  'table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}';

/** The page and the headers it needs: no script at all, the one inline style allowed by its hash. */
export interface HtmlPage {
  body: Buffer;
  headers: Record<string, string>;
}

/**
 * A markdown document as a self-contained HTML page (the deprecation link's target is opened by
 * people, issue 29). Raw HTML in the markdown is escaped, not passed through. Undefined when no
 * markdown renderer is installed.
 */
export function markdownPage(markdown: string): HtmlPage | undefined {
  const markdownIt = loadMarkdownIt();
  if (!markdownIt) return undefined;
  const content = markdownIt({ html: false, linkify: false }).render(markdown);
  const title = /^#\s+(.+)$/m.exec(markdown)?.[1]?.replace(/[`*_]/g, '') ?? 'Documentation';
  const escapedTitle = title.replace(/[&<>"]/g, (char) => `&#${char.charCodeAt(0)};`);
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapedTitle}</title><style>${STYLE}</style></head>
<body><main>
${content}</main></body></html>
`;
  const styleHash = createHash('sha256').update(STYLE).digest('base64');
  const body = Buffer.from(html);
  return {
    body,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-length': String(body.length),
      'content-security-policy': `default-src 'none'; style-src 'sha256-${styleHash}'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      vary: 'Accept',
    },
  };
}
