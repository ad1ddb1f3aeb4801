/**
 * The plans of filtered List pages (docs/cloud-api.md, "List filters"): loads ROWS instances (default
 * 10^5; half under one project) into the scratch PostgreSQL database DATABASE_URL and prints
 * EXPLAIN (ANALYZE, BUFFERS) of each query one filtered page sends. Not a test: a record for the docs.
 */
import { openDatabase, migrateLatest } from '../src/store/database.js';
import { compileFilter } from '../src/engines/filter/index.js';
import { InstanceSchema } from '../generated/proto/cloud/compute/v1/instance_pb.js';
import { filteredList } from '../src/store/filtered-list.js';

const ROWS = Number(process.env.ROWS ?? 100_000);
const db = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: '', statementTimeoutMs: 600_000 });
const knex = db.knex;
await migrateLatest(knex);
const have = Number((await knex.raw('SELECT count(*) AS n FROM compute_instances')).rows[0].n);
if (have < ROWS) {
  // One big parent (project-big, ROWS/2) and small ones (50 each) for the rest.
  await knex.raw(`INSERT INTO compute_instances (id, parent_id, name, resource_version, data, doc)
    SELECT 'instance-' || i, CASE WHEN i <= ${ROWS / 2} THEN 'project-big' ELSE 'project-' || (i / 50) END, 'vm-' || i, 1, '\\x'::bytea,
      jsonb_build_object(
        'metadata', jsonb_build_object('id', 'instance-' || i, 'name', 'vm-' || i, 'createdAt', to_char(now() - i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
          'labels', CASE WHEN i % 10 = 0 THEN jsonb_build_object('env', 'prod') ELSE jsonb_build_object('env', 'dev') END
            || CASE WHEN i % 1000 = 7 THEN jsonb_build_object('team', 'core') ELSE '{}'::jsonb END),
        'spec', jsonb_build_object('description', 'number ' || i),
        'status', jsonb_build_object('state', CASE WHEN i % 100 = 3 THEN 'STATE_STOPPED' ELSE 'STATE_RUNNING' END))
    FROM generate_series(1, ${ROWS}) AS i`);
  await knex.raw('VACUUM ANALYZE compute_instances');
  await knex.raw('VACUUM ANALYZE cloud_resource_labels');
}
const captured: Array<{ sql: string; bindings: unknown[] }> = [];
knex.on('query', (query: { sql: string; bindings: unknown[] }) => captured.push(query));
for (const text of [
  'labels.env = prod',
  'labels:team',
  'status.state = STATE_STOPPED',
  'status.state = STATE_STOPPED AND labels.env = prod',
  'spec.description = "number 49999"',
  'labels.env = prod OR labels:team',
]) {
  captured.length = 0;
  const filter = compileFilter(text, InstanceSchema, { aliases: { labels: 'metadata.labels' } });
  const started = performance.now();
  const result = await filteredList(knex, {
    table: 'compute_instances',
    columns: ['id', 'seq', 'parent_id', 'name', 'resource_version', 'data'],
    parentId: 'project-big',
    afterSeq: 20000,
    limit: 51,
    filter,
    scanRows: 10_000,
  });
  const ms = performance.now() - started;
  console.log(`\n### ${text}\nrows ${result.rows.length}, resumeAfter ${result.resumeAfter}, ${ms.toFixed(1)} ms`);
  for (const query of [...captured]) {
    // The event's SQL is PostgreSQL's ($1, $2… in order); knex.raw takes ?.
    const plan = await knex.raw(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) ${query.sql.replace(/\$\d+/g, '?')}`, query.bindings as never);
    console.log((plan.rows as Array<Record<string, string>>).map((row) => row['QUERY PLAN']).join('\n'));
    console.log('--');
  }
}
await db.close();
