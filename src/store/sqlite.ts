/** The embedded default store: one SQLite file in WAL mode through better-sqlite3. */
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, type SqliteDatabase } from 'kysely';
import { migrate } from './migrations/index.js';
import { Checkpoints, type CheckpointOptions } from './sqlite-checkpoints.js';
import type { Database } from './schema.js';
import type { Db, Store, StoreObserver } from './store.js';

/**
 * Kysely prepares every statement it runs; preparing costs more than running a small statement
 * here (~30 µs against ~4 µs for a primary-key read). Queries come from a small set of builder
 * shapes (and the raw multi-row inserts of queries/bulk-insert.ts, one per row count up to 64),
 * so a bounded cache of prepared statements removes that cost.
 */
function withStatementCache(
  db: BetterSqlite3.Database,
  observer: () => StoreObserver | undefined,
  size = 1024,
): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => db.close(),
    prepare(sql: string) {
      let stmt = cache.get(sql);
      if (stmt) {
        cache.delete(sql); // re-insert: Map order is the LRU order
      } else {
        stmt = timedReads(db.prepare(sql), observer);
        if (cache.size >= size) cache.delete(cache.keys().next().value!);
      }
      cache.set(sql, stmt);
      return stmt;
    },
  };
}

type SqliteStatement = ReturnType<SqliteDatabase['prepare']>;

/**
 * A reading statement whose runs the store's observer times (`Store.observer`: the read latency
 * of the metrics): two clock reads a statement, where Kysely's own log would add three awaits.
 */
function timedReads(
  stmt: BetterSqlite3.Statement,
  observer: () => StoreObserver | undefined,
): SqliteStatement {
  if (!stmt.reader) return stmt;
  return {
    reader: true,
    all(parameters) {
      const o = observer();
      if (o === undefined) return stmt.all(parameters);
      const began = performance.now();
      try {
        return stmt.all(parameters);
      } finally {
        o.read((performance.now() - began) / 1000);
      }
    },
    run: (parameters) => stmt.run(parameters),
    iterate: (parameters) => stmt.iterate(parameters),
  };
}

export async function openSqliteStore(
  file: string,
  o: { checkpoints?: CheckpointOptions } = {},
): Promise<Store> {
  const sqlite = new BetterSqlite3(file);
  sqlite.pragma('journal_mode = WAL');
  // NORMAL in WAL mode is durable across process crashes (kill -9); only an OS crash can lose
  // the last transactions. That is the trade every embedded job queue makes for throughput.
  sqlite.pragma('synchronous = NORMAL');
  // The default page cache (2 MiB) is smaller than the pages a busy pipeline touches (job rows,
  // their indexes, the events' tail): misses made every statement several times slower. An upper
  // bound, allocated as used.
  sqlite.pragma('cache_size = -65536');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // The statements read the store's observer, which is set once the store exists.
  const self: { store?: Store } = {};
  const database = withStatementCache(sqlite, () => self.store?.observer);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
  await migrate(db as unknown as Kysely<unknown>, 'sqlite');
  // Not in the commits of this connection: in a thread of its own (sqlite-checkpoints.ts).
  const checkpoints = new Checkpoints(sqlite, file, o.checkpoints);
  const store: Store = {
    dialect: 'sqlite',
    db,
    transaction: <T>(fn: (tx: Db) => Promise<T>) => db.transaction().execute(fn),
    settle: () => checkpoints.settle(),
    close: async () => {
      await checkpoints.stop();
      await db.destroy();
    },
  };
  self.store = store;
  return store;
}
