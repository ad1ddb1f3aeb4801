/**
 * SQL that prints a timestamp column as a list's sort key for cursors: UTC, to the microsecond (a
 * JavaScript Date would drop the microseconds PostgreSQL keeps), so `?::timestamptz` reads it back
 * exactly and `(column, id) < (key, id)` resumes a page where the last one ended.
 */
export function printTimestamp(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}
