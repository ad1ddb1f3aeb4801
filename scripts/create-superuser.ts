/**
 * `npm run publishing:create-superuser` from a checkout: the command lives in src/tools (compiled into
 * dist/, so the container image runs it as `node dist/src/tools/create-superuser.js`).
 */
await import('../src/tools/create-superuser.js');
