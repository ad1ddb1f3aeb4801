/**
 * Run by disk-full.test.ts as a child process (a regression would spin this process forever, which a
 * child's timeout ends): PGlite on the tmpfs given as argv[2], no disk-space guard, filled with 1 MiB
 * rows until its next WAL segment cannot be created and it PANICs. Prints one JSON line per step.
 */
import { PGlite } from '@electric-sql/pglite';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PgliteStatements } from '../../src/store/pglite/statements.js';

const mount = process.argv[2]!;
const dataDir = join(mount, 'data');
mkdirSync(dataDir, { mode: 0o700 });
const report = (line: Record<string, unknown>) => console.log(JSON.stringify(line));

let panics = 0;
const statements = new PgliteStatements(await PGlite.create({ dataDir }), { onPanic: () => panics++ });
await statements.run('create table filler (body bytea)', []);
// 4 MiB held back, so that the WAL segment, not a table file, is what no longer fits.
writeFileSync(join(mount, 'held'), Buffer.alloc(4 * 1024 * 1024, 1));
for (let row = 0; row < 64 && panics === 0; row++) {
  try {
    await statements.run(`insert into filler (body) values (decode($1, 'hex'))`, [randomBytes(1024 * 1024).toString('hex')]);
  } catch (error) {
    const { severity, code } = error as { severity?: string; code?: string };
    report({ step: 'insert failed', severity, code });
  }
}
for (const sql of ['select count(*) from filler', `insert into filler (body) values ('x')`]) {
  const started = performance.now();
  const code = await statements.run(sql, []).then(
    () => 'ok',
    (error: unknown) => (error as { code?: string }).code,
  );
  report({ step: 'after the PANIC', sql, code, ms: performance.now() - started });
}
rmSync(join(mount, 'held'));
const fresh = await PGlite.create({ dataDir });
statements.replace(fresh);
const inserted = await statements.run(`insert into filler (body) values ('x')`, []);
report({ step: 'replaced', panics, inserted: inserted.affectedRows });
await fresh.close();
