import type { Knex } from 'knex';
import { migrationSource } from './migrations/index.js';

/** How the database's schema compares with this code's migrations. */
export interface SchemaState {
  /** Migrations of this code the database has not run (the schema is behind: not ready). */
  missing: string[];
  /** Migrations the database ran that this code does not know (a newer release migrated: served on). */
  unknown: string[];
}

/**
 * Compares knex's record of the migrations run (`knex_migrations`, absent on an empty database) with
 * this code's list: one small read of a table of a few dozen rows.
 */
export async function readSchemaState(knex: Knex): Promise<SchemaState> {
  const known = await migrationSource.getMigrations([]);
  const rows = await knex
    .raw<{ rows: Array<{ name: string }> }>('SELECT name FROM knex_migrations')
    .then(({ rows: found }) => found)
    .catch((error: unknown) => {
      // undefined_table: nothing was ever migrated here.
      if ((error as { code?: string }).code === '42P01') return [];
      throw error;
    });
  const done = new Set(rows.map((row) => row.name));
  const knownNames = new Set(known);
  return {
    missing: known.filter((name) => !done.has(name)),
    unknown: [...done].filter((name) => !knownNames.has(name)).sort(),
  };
}

/** One named check of `/readyz`: passes, or says why not. */
export interface ReadinessCheck {
  name: string;
  ok: boolean;
  detail?: string;
}

/**
 * The schema as `/readyz` reports it: ready unless migrations of this code are missing, named in the
 * detail (a newer schema is fine: additive migrations keep older code working).
 */
export function schemaReadiness(state: SchemaState): ReadinessCheck {
  if (state.missing.length === 0) return { name: 'schema', ok: true };
  return { name: 'schema', ok: false, detail: `missing migrations: ${state.missing.join(', ')} (run \`cfs-server migrate\`)` };
}
