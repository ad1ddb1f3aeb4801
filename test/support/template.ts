import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const TEMPLATE_DIR = `${ROOT}.tmp`;

/** A key that changes whenever a migration changes, so a stale template is never reused. */
export function migrationsKey(): string {
  const dir = `${ROOT}src/store/migrations`;
  const hash = createHash('sha256');
  for (const file of readdirSync(dir).sort()) hash.update(file).update(readFileSync(`${dir}/${file}`));
  return hash.digest('hex').slice(0, 16);
}

export function pgliteTemplatePath(): string {
  return `${TEMPLATE_DIR}/pglite-template-${migrationsKey()}.tar.gz`;
}
