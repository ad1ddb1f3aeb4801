import { fileURLToPath } from 'node:url';
import { templateKey } from '../../src/store/pglite-template.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TEMPLATE_DIR = `${ROOT}.tmp`;

/** The suite's migrated PGlite template, named by its key so a stale one is never reused (src/store/pglite-template.ts). */
export function pgliteTemplatePath(): string {
  return `${TEMPLATE_DIR}/pglite-template-${templateKey()}.tar`;
}
