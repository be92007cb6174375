/**
 * Write-behind for PostgreSQL transactions that ask for it (a group commit's): a write that
 * returns nothing — an insert, update or delete without RETURNING, a notification — is not sent
 * at once but kept, and the kept writes go together, in order, in one round trip just before the
 * next statement that answers something (a read, an insert that returns an id) or with the
 * COMMIT itself. node-postgres waits for each statement's answer before it sends the next, and
 * a statement costs a round trip (0.1–0.2 ms here) however little it does: a batch of a hundred
 * job transitions was a hundred round trips, and the controller waits for its commits.
 *
 * The kept writes go as one multi-statement query of the simple protocol, which takes no
 * parameters: each parameter is written into its statement as a literal (pg's escapeLiteral for
 * strings). Only statements whose text has no quote of its own are kept (what Kysely's builders
 * make: values are parameters, identifiers are double-quoted), and only with parameters that are
 * strings without a NUL, finite numbers, bigints, booleans or null; anything else is sent at
 * once, after the kept ones. A kept write answers with no row count (units of a group commit never ask for one).
 * When the kept writes fail together, which one failed is not known: the error is a
 * WriteBehindError, and the group commit runs the batch again without write-behind, a unit at a
 * time, so that the failing unit alone gets its error.
 */
import pg from 'pg';
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';

/** The statement a transaction sends to start keeping its writes; never reaches the server. */
export const WRITE_BEHIND = '-- berth: write behind';

/**
 * Kept writes failed together: PostgreSQL's error (its message and SQLSTATE `code`, which the
 * checks in errors.ts read), from a statement that is not known.
 */
export class WriteBehindError extends Error {
  readonly code: unknown;

  constructor(override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
    this.code = (cause as { code?: unknown } | null)?.code;
  }
}

const DEFERRABLE =
  /^\s*(?:insert|update|delete)\b(?![\s\S]*\breturning\b)|^\s*select pg_notify\(\$1, \$2\)\s*$/i;
const COMMIT = /^\s*commit\s*$/i;
const ROLLBACK = /^\s*rollback\s*$/i;

/** `value` as an SQL literal, or undefined when it is not one this module writes. */
function literal(value: unknown): string | undefined {
  if (value === null || value === undefined) return 'NULL';
  // Never a NUL: the simple protocol's query is a C string, which one would cut short — a
  // protocol violation (08P01) for the whole batch. Sent as a parameter, the statement fails
  // alone with a data error (22021) that names its unit.
  if (typeof value === 'string') return value.includes('\u0000') ? undefined : pg.escapeLiteral(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  return undefined;
}

/** The statement with its parameters written in, or undefined when it cannot be kept. */
export function inlined(sql: string, params: readonly unknown[]): string | undefined {
  if (!DEFERRABLE.test(sql) || sql.includes("'") || sql.includes('$$')) return undefined;
  const values = params.map(literal);
  if (values.some((v) => v === undefined)) return undefined;
  let ok = true;
  const text = sql.replace(/\$(\d+)/g, (_, n: string) => {
    const v = values[Number(n) - 1];
    if (v === undefined) ok = false;
    return v ?? '';
  });
  return ok ? text : undefined;
}

type Query = PostgresPoolClient['query'];

/** A pooled connection that keeps the writes of a transaction that sent WRITE_BEHIND. */
class WriteBehindClient implements PostgresPoolClient {
  private kept: string[] | undefined;

  constructor(private readonly client: pg.PoolClient) {}

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    sqlOrCursor: string | PostgresCursor<R>,
    parameters?: ReadonlyArray<unknown>,
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    if (typeof sqlOrCursor !== 'string') return (this.client.query as unknown as Query)(sqlOrCursor);
    return this.run<R>(sqlOrCursor, parameters ?? []);
  }

  private async run<R>(sql: string, params: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
    if (sql === WRITE_BEHIND) {
      this.kept = [];
      return { command: 'SELECT', rowCount: 0, rows: [] };
    }
    const kept = this.kept;
    if (kept) {
      if (ROLLBACK.test(sql)) this.kept = undefined;
      else {
        const text = inlined(sql, params);
        if (text !== undefined) {
          kept.push(text);
          return { command: 'SELECT', rowCount: 0, rows: [] }; // no row count: see above
        }
        if (COMMIT.test(sql)) {
          this.kept = undefined;
          if (kept.length > 0) return this.send<R>([...kept, 'commit']);
        } else if (kept.length > 0) {
          await this.send([...kept]);
          kept.length = 0;
        }
      }
    }
    return this.client.query(sql, params as unknown[]) as unknown as Promise<PostgresQueryResult<R>>;
  }

  private async send<R>(statements: string[]): Promise<PostgresQueryResult<R>> {
    try {
      await this.client.query(statements.join(';\n'));
    } catch (e) {
      this.kept = undefined;
      throw new WriteBehindError(e);
    }
    return { command: 'SELECT', rowCount: 0, rows: [] };
  }

  release(): void {
    this.kept = undefined;
    this.client.release();
  }
}

/**
 * `pool` as Kysely sees it, with write-behind on the transactions that ask for it; `connect`
 * takes a connection from it (pg-schema-gate.ts's, which holds each to the schema).
 */
export function writeBehindPool(
  pool: pg.Pool,
  connect: () => Promise<pg.PoolClient> = () => pool.connect(),
): PostgresPool {
  return {
    connect: async () => new WriteBehindClient(await connect()),
    end: () => pool.end(),
  };
}
