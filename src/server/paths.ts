import { fileURLToPath } from 'node:url';

/** The repository root, where `contracts/` lives (the same from src/ under tsx and from tests). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
