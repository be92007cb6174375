/**
 * Statements the controller runs for every job — a job's transitions, its worker's, its token's
 * insert, lookup and delete — as text written once per shape and run as raw compiled queries, as
 * bulk-insert.ts does for inserts: Kysely's builder costs several times what SQLite takes to run
 * such a statement (about 40 µs against 5), and a job makes a dozen of them. Identifiers are
 * quoted, values are parameters.
 */
import { CompiledQuery, PostgresAdapter, type Updateable } from 'kysely';
import type { Database } from '../schema.js';
import type { Db, Dialect } from '../store.js';

/** An identifier, quoted (berth's names need no escaping). */
export const quoted = (name: string): string => `"${name}"`;

/** The dialect a handle (or transaction) speaks: its placeholders differ. */
export function dialectOf(db: Db): Dialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/** The dialect's placeholder for parameter `n` (from 1). */
export const placeholder = (dialect: Dialect, n: number): string => (dialect === 'postgres' ? `$${n}` : '?');

const texts = new Map<string, string>();

/** A statement's text, written by `write` the first time `key` is asked for. */
export function statementText(key: string, write: () => string): string {
  let text = texts.get(key);
  if (text === undefined) {
    text = write();
    texts.set(key, text);
  }
  return text;
}

/**
 * `UPDATE table SET c1 = …, c2 = … WHERE "id" = …`, for the columns `row` gives a value (as
 * Kysely's `set`, a column whose value is undefined is left alone).
 */
export async function updateById<T extends keyof Database>(
  db: Db,
  table: T,
  id: number,
  row: Updateable<Database[T]>,
): Promise<void> {
  const columns: string[] = [];
  const params: unknown[] = [];
  for (const [column, value] of Object.entries(row))
    if (value !== undefined) {
      columns.push(column);
      params.push(value);
    }
  if (columns.length === 0) return;
  params.push(id);
  const dialect = dialectOf(db);
  const text = statementText(`${dialect} update ${table} ${columns.join(' ')}`, () => {
    const set = columns.map((c, i) => `${quoted(c)} = ${placeholder(dialect, i + 1)}`).join(', ');
    return `UPDATE ${quoted(table)} SET ${set} WHERE "id" = ${placeholder(dialect, columns.length + 1)}`;
  });
  await db.executeQuery(CompiledQuery.raw(text, params));
}

/** Runs a fixed statement (one text per dialect) with `params`; its rows. */
export async function runFixed<R>(
  db: Db,
  name: string,
  write: (p: (n: number) => string) => string,
  params: unknown[],
): Promise<R[]> {
  const dialect = dialectOf(db);
  const text = statementText(`${dialect} ${name}`, () => write((n) => placeholder(dialect, n)));
  return (await db.executeQuery<R>(CompiledQuery.raw(text, params))).rows;
}
