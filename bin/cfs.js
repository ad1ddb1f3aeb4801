#!/usr/bin/env node
// The `cfs` command-line client: registers tsx (so the TypeScript sources run as they are) and
// starts src/cli/main.ts. `npm run cli -- <command>` does the same from a checkout.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
