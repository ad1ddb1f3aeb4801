/**
 * The number of rows an UPDATE/DELETE touched. knex answers a number on pg; through knex-pglite it
 * may answer the driver's result object ({ affectedRows, rowCount }) instead.
 */
export function affectedRows(result: unknown): number {
  if (typeof result === 'number') return result;
  if (typeof result === 'object' && result !== null) {
    const { rowCount, affectedRows: affected } = result as { rowCount?: unknown; affectedRows?: unknown };
    if (typeof rowCount === 'number') return rowCount;
    if (typeof affected === 'number') return affected;
  }
  return 0;
}
