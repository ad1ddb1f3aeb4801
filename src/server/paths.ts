import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository root, where `contracts/` and `docs/` live: the nearest directory above this module
 * holding a package.json. Walking up (instead of a fixed `../../`) gives the same answer from src/
 * under tsx and jest and from the compiled dist/src/ of `npm run build`.
 */
function findRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return `${dir}/`;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${start}`);
  }
}

export const ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));
