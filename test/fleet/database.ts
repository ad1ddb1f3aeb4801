/**
 * What the fleet test looks up in PostgreSQL after the load: are the acknowledged writes there, once
 * each, and did every operation complete exactly once; and how many times the migrations ran.
 */
import pg from 'pg';

export async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** Of `ids`, those with no row in `table` (column `id`). */
export async function missingIds(client: pg.Client, table: 'webhook_requests' | 'users', ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const { rows } = await client.query<{ id: string }>(`SELECT id::text FROM ${table} WHERE id::text = ANY($1::text[])`, [ids]);
  const found = new Set(rows.map((row) => row.id));
  return ids.filter((id) => !found.has(id));
}

/** Captures on `routeIds` stored more than once: the same `n=` marker (one per request the load sent) on two rows. */
export async function duplicatedCaptures(client: pg.Client, routeIds: string[]): Promise<string[]> {
  const { rows } = await client.query<{ query: string; count: string }>(
    'SELECT query, count(*)::text AS count FROM webhook_requests WHERE route_id = ANY($1::uuid[]) GROUP BY query HAVING count(*) > 1',
    [routeIds],
  );
  return rows.map((row) => `${row.query} x${row.count}`);
}

export interface OperationOutcome {
  /** Not finished (yet): no status, or work not done. */
  unfinished: string[];
  /** Finished, but the instance shows its work applied other than once (resource_version is 1 at insert, +1 per completion). */
  notOnce: string[];
  /** Resources with more than one Create operation (an idempotency key that made two). */
  doubled: string[];
}

export async function operationOutcome(client: pg.Client, operations: { id: string; resourceId: string }[]): Promise<OperationOutcome> {
  if (operations.length === 0) return { unfinished: [], notOnce: [], doubled: [] };
  const { rows } = await client.query<{ id: string; resource_id: string; done: boolean; version: string | null; creates: string }>(
    `SELECT o.id, o.resource_id, (o.state = 'done' AND o.status IS NOT NULL) AS done, i.resource_version::text AS version,
            (SELECT count(*) FROM operations c WHERE c.resource_id = o.resource_id AND c.description = 'Create instance')::text AS creates
       FROM operations o LEFT JOIN compute_instances i ON i.id = o.resource_id
      WHERE o.id = ANY($1::text[])`,
    [operations.map((operation) => operation.id)],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  const outcome: OperationOutcome = { unfinished: [], notOnce: [], doubled: [] };
  for (const operation of operations) {
    const row = byId.get(operation.id);
    if (!row || !row.done) outcome.unfinished.push(operation.id);
    else if (row.version !== '2') outcome.notOnce.push(`${operation.id} (resource_version ${row.version ?? 'gone'})`);
    if (row && row.creates !== '1') outcome.doubled.push(`${operation.resourceId} (${row.creates} creates)`);
  }
  return outcome;
}

/** knex's record of the migrations: how many ran, in how many batches, and any name recorded twice. */
export async function migrationRecord(client: pg.Client): Promise<{ migrations: number; batches: number; repeated: number }> {
  const { rows } = await client.query<{ migrations: string; batches: string; names: string }>(
    'SELECT count(*)::text AS migrations, count(DISTINCT batch)::text AS batches, count(DISTINCT name)::text AS names FROM knex_migrations',
  );
  const row = rows[0] ?? { migrations: '0', batches: '0', names: '0' };
  return { migrations: Number(row.migrations), batches: Number(row.batches), repeated: Number(row.migrations) - Number(row.names) };
}
