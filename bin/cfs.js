#!/usr/bin/env node
// The `cfs` command-line client. In a checkout with dev dependencies it registers tsx and runs the
// TypeScript sources as they are (src/cli/main.ts), so a change needs no build; where tsx is not
// installed (production install, the container image) it runs the compiled dist/src/cli/main.js.
// `npm run cli -- <command>` does the same from a checkout.
let tsx;
try {
  tsx = await import('tsx/esm/api');
} catch {
  tsx = undefined;
}
if (tsx) {
  tsx.register();
  await import('../src/cli/main.ts');
} else {
  await import('../dist/src/cli/main.js');
}
