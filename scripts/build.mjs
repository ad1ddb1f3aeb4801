// `npm run build`: compile src/ and generated/ to dist/ with tsc (tsconfig.build.json), then copy the
// files tsc does not emit. Plain JavaScript so it runs without tsx. dist/contracts (the client
// package of `npm run contracts:bundle`) is left alone.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';

for (const dir of ['dist/src', 'dist/generated']) rmSync(dir, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
} catch {
  process.exit(1); // tsc has printed the errors
}
cpSync('src/handlers/webhook-inspector-assets', 'dist/src/handlers/webhook-inspector-assets', { recursive: true });
