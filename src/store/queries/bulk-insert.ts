/**
 * Multi-row INSERTs as text written once per shape (table, row count) and run as raw compiled
 * queries: they run for every submission and every job's end, and Kysely's builder spends about
 * ten times longer making such a statement than SQLite running it. Identifiers are quoted, values
 * are parameters: what PostgreSQL's write-behind sends together (store/pg-write-behind.ts).
 */
import { CompiledQuery } from 'kysely';
import type { Db, Dialect } from '../store.js';
import { placeholder, quoted, statementText } from './statement-text.js';

/**
 * Rows per statement at most: few sizes, so few statements to keep here and in SQLite's cache of
 * prepared statements (store/sqlite.ts); an allocation of a month (720 hourly rows) takes 12.
 */
const ROWS_PER_INSERT = 64;

/** An `INSERT` of `rows` rows into `table` in the dialect's placeholders, with `conflict` after it. */
export function insertSql(
  dialect: Dialect,
  table: string,
  columns: string[],
  rows: number,
  conflict = '',
): string {
  // Each table is written with one column list and one conflict clause: the key leaves them out.
  return statementText(`${dialect} insert ${table} ${rows}`, () => {
    let n = 0;
    const row = () => `(${columns.map(() => placeholder(dialect, ++n)).join(', ')})`;
    return `INSERT INTO ${quoted(table)} (${columns.map(quoted).join(', ')}) VALUES ${Array.from({ length: rows }, row).join(', ')}${conflict}`;
  });
}

/** Inserts `rows` (each row's values in `columns` order), ROWS_PER_INSERT per statement. */
export async function insertRows(
  db: Db,
  dialect: Dialect,
  table: string,
  columns: string[],
  rows: unknown[][],
  conflict?: string,
): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    const slice = rows.slice(i, i + ROWS_PER_INSERT);
    await db.executeQuery(
      CompiledQuery.raw(insertSql(dialect, table, columns, slice.length, conflict), slice.flat()),
    );
  }
}
