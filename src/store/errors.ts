/** Driver errors the services act on, recognised the same way on both stores. */

/** A unique index refused a row: someone else inserted the same key at the same time. */
export function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * PostgreSQL's connection exceptions (class 08) and shutdowns (57P01–57P03). Not 08P01, a
 * protocol violation: a malformed message (a NUL in a query's text) that the server refused while
 * the connection stays up. Taken for the store being down, one bad value made a replica step down
 * and its factories end every running job.
 */
const UNAVAILABLE_SQLSTATE = /^(08(?!P01)|57P0[123])/;
const UNAVAILABLE_NET = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** The store cannot be reached (its server restarting, the network down): worth trying again. */
export function isStoreUnavailable(e: unknown): boolean {
  if (e instanceof AggregateError) return e.errors.some(isStoreUnavailable);
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_NET.has(code))) return true;
  const message = e instanceof Error ? e.message : '';
  return /^Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(
    message,
  );
}

/**
 * PostgreSQL gave up one of two transactions that waited for each other (a deadlock, 40P01) or
 * could not serialize them (40001): the same transaction run again succeeds.
 */
export function isTransientConflict(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}
