/**
 * The two stores, each opened fresh and empty for a conformance suite: SQLite in a file of a
 * temporary directory, PostgreSQL in a database of its own on PG_ADMIN_URL's server (skipped,
 * saying why, when that server cannot be reached). Both run in the same test process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgresStore } from '../../src/store/postgres.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Dialect, Store } from '../../src/store/store.js';
import { createTestDatabase, postgresUnreachable } from '../helpers/store.js';

/** A fresh, empty, migrated store of one dialect, and how to be rid of it. */
export interface OpenedStore {
  store: Store;
  /** Closes the store and removes what it was kept in. */
  dispose: () => Promise<void>;
}

export interface StoreKind {
  dialect: Dialect;
  open(): Promise<OpenedStore>;
  /** Why this store cannot be tested here (its suites are skipped saying so). */
  skip?: string;
}

const sqlite: StoreKind = {
  dialect: 'sqlite',
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'berth-store-'));
    const store = await openSqliteStore(join(dir, 'berth.db'));
    return {
      store,
      dispose: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const unreachable = await postgresUnreachable();

const postgres: StoreKind = {
  dialect: 'postgres',
  ...(unreachable ? { skip: unreachable } : {}),
  async open() {
    const database = await createTestDatabase();
    const store = await openPostgresStore(database.url);
    return {
      store,
      dispose: async () => {
        await store.close();
        await database.drop();
      },
    };
  },
};

/** Every store berth has, in the order the suites run them. */
export const STORE_KINDS: StoreKind[] = [sqlite, postgres];
