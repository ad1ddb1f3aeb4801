/** SQLSTATE of a unique-index violation (PostgreSQL and PGlite report the same code). */
const UNIQUE_VIOLATION = '23505';

/**
 * A `.catch` handler for an insert or update guarded by a unique index: a concurrent writer that
 * loses the race on the index gets the same conflict as the check that ran before it (409 /
 * ALREADY_EXISTS), not an internal error. Any other error passes through unchanged.
 */
export function onUniqueViolation(conflict: () => Error): (error: unknown) => never {
  return (error) => {
    if (typeof error === 'object' && error !== null && (error as { code?: unknown }).code === UNIQUE_VIOLATION) throw conflict();
    throw error;
  };
}
