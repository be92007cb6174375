/** The embedded default store: one SQLite file in WAL mode through better-sqlite3. */
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { migrate } from './migrations/index.js';
import type { Database } from './schema.js';
import type { Db, Store } from './store.js';

export async function openSqliteStore(file: string): Promise<Store> {
  const sqlite = new BetterSqlite3(file);
  sqlite.pragma('journal_mode = WAL');
  // NORMAL in WAL mode is durable across process crashes (kill -9); only an OS crash can lose
  // the last transactions. That is the trade every embedded job queue makes for throughput.
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  await migrate(db as unknown as Kysely<unknown>, 'sqlite');
  return {
    dialect: 'sqlite',
    db,
    transaction: <T>(fn: (tx: Db) => Promise<T>) => db.transaction().execute(fn),
    close: () => db.destroy(),
  };
}
