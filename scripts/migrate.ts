/**
 * `npm run migrate` from a checkout: the command lives in src/tools (compiled into dist/, so the
 * installed package and the container image run it as `cfs-server migrate`).
 */
await import('../src/tools/migrate.js');
