import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';

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

/** A served build-time file: its bytes, and the build's gzip'd copy when there is one. */
export interface VendoredBytes {
  /** The file's own bytes, read (or decompressed) on first use. */
  identity: () => Buffer;
  /** dist/vendor/<package>/<file>.gz, written by the build; the image ships only this one. */
  gzip?: Buffer;
}

/**
 * A build-time package's file as the browser pages serve it: with the build's precompressed copy
 * (scripts/build.mjs, PRECOMPRESSED) when there is one, whose decompressed bytes are made only for a
 * client that does not accept gzip when the file itself is not beside it (the image keeps only the `.gz`).
 */
export function vendoredBytes(name: string, file: string): VendoredBytes {
  const compressed = join(VENDOR_DIR, name, `${file}.gz`);
  let identity: Buffer | undefined;
  if (!existsSync(compressed)) return { identity: () => (identity ??= readFileSync(vendoredFile(name, file))) };
  const gzip = readFileSync(compressed);
  const copy = join(VENDOR_DIR, name, file);
  return { gzip, identity: () => (identity ??= existsSync(copy) ? readFileSync(copy) : gunzipSync(gzip)) };
}

/**
 * Whether an Accept-Encoding header accepts gzip: `gzip` or `x-gzip` listed without `q=0`
 * (RFC 9110, 12.5.3). `*` is not taken as gzip: the rare client that sends only that gets the file as is.
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(',') : (header ?? '');
  return value.split(',').some((entry) => {
    const [coding = '', ...parameters] = entry.split(';').map((part) => part.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== 'x-gzip') return false;
    const quality = parameters.find((parameter) => parameter.startsWith('q='));
    return quality === undefined || Number(quality.slice(2)) > 0;
  });
}
