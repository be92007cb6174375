/**
 * The persistence port. Callers get a Kysely instance typed with berth's tables and run every
 * change together with its event record inside `transaction`. Adapters differ only in how they
 * connect and in a few DDL details inside the migrations; queries are dialect-neutral.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

/** A query executor: the root handle or a transaction (Kysely's Transaction extends Kysely). */
export type Db = Kysely<Database>;

export interface TransactionOptions {
  /**
   * `serializable` (the default): as if no other transaction ran at the same time, so that a
   * check and the write it allows (no user of that name yet → insert it) cannot be overtaken;
   * on PostgreSQL a transaction that would break that is run again (so `fn` may run more than
   * once). `read-committed`: for writers that need no such guarantee and must not be retried
   * (the group commit's batches). SQLite runs one transaction at a time: both are serializable.
   */
  isolation?: 'serializable' | 'read-committed';
}

/** What the store tells of its work as it goes (the server's metrics: berth_store_*). */
export interface StoreObserver {
  /** A group commit wrote `units` in one transaction, in `seconds` (begin to commit, runs again included). */
  batch(units: number, seconds: number): void;
  /** A read statement (a SELECT) took `seconds`. */
  read(seconds: number): void;
}

/** Whether `sql` reads (a SELECT): what `StoreObserver.read` times. */
export const isRead = (sql: string): boolean => /^\s*select\b/i.test(sql);

export interface Store {
  readonly dialect: Dialect;
  readonly db: Db;
  /** Told of every group commit's batch and every read statement, once set (the server sets it). */
  observer?: StoreObserver;
  /** Runs `fn` in one transaction: all of its writes land, or none do. */
  transaction<T>(fn: (tx: Db) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /**
   * From now on, transaction `tx` sends its writes that return nothing together, in one round
   * trip before its next read or its commit (PostgreSQL: pg-write-behind.ts; absent on SQLite,
   * where a statement is a function call). Such a write reports no row count.
   */
  writeBehind?(tx: Db): Promise<void>;
  /**
   * For a long run of background writes (the retention sweep), between two of its transactions:
   * waits, a bounded time, while the store's own upkeep has fallen behind them (SQLite: a WAL that
   * the checkpoints have not caught up with, sqlite-checkpoints.ts); at once otherwise.
   */
  settle?(): Promise<void>;
  close(): Promise<void>;
}
