import type { Knex } from 'knex';

/** Where the seeded state is kept, beside the server's tables (never served, never migrated). */
const SCHEMA = 'sandbox_seed';

/** Tables the snapshot leaves alone: the migrations' own bookkeeping. */
const KEPT = new Set(['knex_migrations', 'knex_migrations_lock']);

interface TableShape {
  name: string;
  /** Columns a row can be inserted with (generated columns are computed again). */
  columns: string[];
}

/**
 * The seeded state of the sandbox's store, kept in the store itself: `take` copies every table into
 * a schema of its own once the seed is made and writes one PL/pgSQL function that puts it back;
 * `restore` calls it — one statement, one transaction: every table emptied, the copies inserted
 * with foreign keys and triggers off (`session_replication_role = replica`, so the order does not
 * matter and no NOTIFY fires), each sequence set back where it was. A few hundred rows: tens of
 * milliseconds, where seeding again through the services would take seconds (argon2, RSA keys).
 */
export class SeedSnapshot {
  constructor(private readonly knex: Knex) {}

  async take(): Promise<void> {
    const rows = (
      await this.knex.raw<{ rows: Array<{ table_name: string; column_name: string }> }>(
        `SELECT c.table_name, c.column_name FROM information_schema.columns c
           JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
          WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' AND c.is_generated = 'NEVER'
          ORDER BY c.table_name, c.ordinal_position`,
      )
    ).rows;
    const byTable = new Map<string, string[]>();
    for (const row of rows) {
      if (KEPT.has(row.table_name)) continue;
      byTable.set(row.table_name, [...(byTable.get(row.table_name) ?? []), row.column_name]);
    }
    const tables: TableShape[] = [...byTable].map(([name, columns]) => ({ name, columns }));
    const sequences = (
      await this.knex.raw<{ rows: Array<{ name: string; value: string | null }> }>(
        `SELECT format('%I.%I', schemaname, sequencename) AS name, last_value AS value FROM pg_sequences WHERE schemaname = 'public'`,
      )
    ).rows;
    const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;
    const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;
    const body = [
      'DECLARE total bigint := 0; added bigint;',
      'BEGIN',
      'SET LOCAL session_replication_role = replica;',
      tables.length > 0 ? `TRUNCATE ${tables.map((table) => `public.${quote(table.name)}`).join(', ')};` : '',
      ...tables.map((table) => {
        const list = table.columns.map(quote).join(', ');
        return `INSERT INTO public.${quote(table.name)} (${list}) OVERRIDING SYSTEM VALUE SELECT ${list} FROM ${SCHEMA}.${quote(table.name)}; GET DIAGNOSTICS added = ROW_COUNT; total := total + added;`;
      }),
      ...sequences.map((sequence) =>
        sequence.value === null
          ? `PERFORM setval(${literal(sequence.name)}::regclass, 1, false);`
          : `PERFORM setval(${literal(sequence.name)}::regclass, ${Number(sequence.value)}, true);`,
      ),
      'RETURN total;',
      'END',
    ].join('\n');
    await this.knex.transaction(async (trx) => {
      await trx.raw(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
      await trx.raw(`CREATE SCHEMA ${SCHEMA}`);
      for (const table of tables) {
        await trx.raw(`CREATE TABLE ${SCHEMA}.${quote(table.name)} AS SELECT ${table.columns.map(quote).join(', ')} FROM public.${quote(table.name)}`);
      }
      await trx.raw(`CREATE FUNCTION ${SCHEMA}.restore() RETURNS bigint LANGUAGE plpgsql AS $sandbox$\n${body}\n$sandbox$`);
    });
  }

  /** Puts the seeded state back; answers how many rows that is. */
  async restore(): Promise<number> {
    const result = await this.knex.raw<{ rows: Array<{ restore: string | number }> }>(`SELECT ${SCHEMA}.restore() AS restore`);
    return Number(result.rows[0]?.restore ?? 0);
  }
}
