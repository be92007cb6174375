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

export interface Store {
  readonly dialect: Dialect;
  readonly db: Db;
  /** Runs `fn` in one transaction: all of its writes land, or none do. */
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
