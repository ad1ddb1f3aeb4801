import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Files the server serves or loads from packages it needs only at build time (devDependencies): the
 * browser pages' bundles (GraphiQL, React, Swagger UI) and markdown-it. `npm run build` copies each
 * into dist/vendor/<package>/ (scripts/build.mjs, VENDORED), so the image and the packed tarball carry
 * those few files instead of the packages and their ~55 MB of dependencies (docs/deploying.md).
 *
 * Found beside this module: from dist/src/server/ (the per-file build or the bundle, whose
 * import.meta.url is rewritten to this file's) that is dist/vendor/, this build's own copy; from src/
 * (tsx, jest) there is none, and the file comes from the package in node_modules.
 */
export const VENDOR_DIR = fileURLToPath(new URL('../../vendor/', import.meta.url));

/** Where a build-time package's file is: the build's copy in dist/vendor/ when there is one, else node_modules. */
export function vendoredFile(name: string, file: string): string {
  const copy = join(VENDOR_DIR, name, file);
  if (existsSync(copy)) return copy;
  return join(dirname(createRequire(import.meta.url).resolve(`${name}/package.json`)), file);
}
