/**
 * The PostgreSQL store: the same tables, migrations and queries as SQLite's, through Kysely's
 * PostgreSQL dialect on a node-postgres pool. What several server replicas share.
 */
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { MIGRATIONS, type KnownMigrations } from './migrations/index.js';
import { migrateAlone, schemaHeldConnect } from './pg-schema-gate.js';
import { WRITE_BEHIND, writeBehindPool } from './pg-write-behind.js';
import type { Database } from './schema.js';
import { isRead, type Db, type Store, type TransactionOptions } from './store.js';

/** int8 (ids, epoch-millisecond times, counts) as numbers: all stay far below 2^53. */
const INT8 = 20;
const builtin = pg.types.getTypeParser as (
  oid: number,
  format?: 'text' | 'binary',
) => (text: string) => unknown;
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8 && format !== 'binary'
      ? Number
      : builtin(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

export interface PostgresOptions {
  /** Connections in the pool (default 10). */
  max?: number;
  /**
   * PostgreSQL ends a session that sits idle inside a transaction this long. A replica frozen
   * mid-transaction (a long pause, SIGSTOP) would otherwise hold its locks — the lease row's among
   * them — and stop the others from electing a new leader until it woke. None by default.
   */
  idleInTransactionMs?: number;
  /** Shown in pg_stat_activity. */
  applicationName?: string;
  /**
   * The migrations this berth knows: MIGRATIONS. Only tests pass fewer, to play an older berth
   * in a rolling upgrade (and a server reads BERTH_TEST_MIGRATIONS for the same, see open-store.ts).
   */
  migrations?: KnownMigrations;
  /** Said when the migration waits for the replicas of an older berth to stop. */
  onWaiting?: (line: string) => void;
}

/** A pool on `url` with berth's type parsing; the caller ends it. */
export function postgresPool(url: string, opts: PostgresOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    application_name: opts.applicationName ?? 'berth',
    connectionTimeoutMillis: 10_000,
    types,
    ...(opts.idleInTransactionMs ? { idle_in_transaction_session_timeout: opts.idleInTransactionMs } : {}),
  });
  // A connection the server drops (a restart, an admin's pg_terminate_backend) is an 'error'
  // event — on the pool while it is idle, on the client itself while it is checked out between
  // queries (inside a transaction). Unhandled, either would end the process; the query that next
  // uses the connection fails instead, and a new one is opened.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

export async function openPostgresStore(url: string, opts: PostgresOptions = {}): Promise<Store> {
  const known = opts.migrations ?? MIGRATIONS;
  // Rolling upgrades (pg-schema-gate.ts): migrated only once no older replica is connected, and
  // every connection held to this berth's schema.
  await migrateAlone(url, { known, ...(opts.onWaiting ? { onWaiting: opts.onWaiting } : {}) });
  const pool = postgresPool(url, opts);
  const self: { store?: Store } = {};
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: writeBehindPool(pool, schemaHeldConnect(pool, known)) }),
    // Reads timed for the store's observer (its metrics); beside a round trip, the log costs nothing.
    log: (e) => {
      if (e.level === 'query' && isRead(e.query.sql))
        self.store?.observer?.read(e.queryDurationMillis / 1000);
    },
  });
  const store: Store = {
    dialect: 'postgres',
    db,
    transaction: <T>(fn: (tx: Db) => Promise<T>, opts: TransactionOptions = {}) =>
      opts.isolation === 'read-committed'
        ? db.transaction().execute(fn)
        : serializable(() => db.transaction().setIsolationLevel('serializable').execute(fn)),
    writeBehind: async (tx) => void (await sql.raw(WRITE_BEHIND).execute(tx)),
    close: () => db.destroy(),
  };
  self.store = store;
  return store;
}

/** serialization_failure and deadlock_detected: the transaction may succeed if run again. */
const RETRYABLE = new Set(['40001', '40P01']);
const ATTEMPTS = 8;

/** Runs `attempt` again while PostgreSQL refuses it for a concurrent transaction, with jitter. */
async function serializable<T>(attempt: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      if (i >= ATTEMPTS || typeof code !== 'string' || !RETRYABLE.has(code)) throw e;
      await new Promise((r) => setTimeout(r, Math.random() * 5 * 2 ** i));
    }
  }
}
