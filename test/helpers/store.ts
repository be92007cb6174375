/**
 * The store the suite runs on: SQLite by default, PostgreSQL when BERTH_TEST_STORE=postgres
 * (`npm test` runs the whole suite once on each, as Kysely's tests loop over dialects). On
 * PostgreSQL every server gets a database of its own, made empty and dropped when it closes.
 */
import pg from 'pg';

export type TestStore = 'sqlite' | 'postgres';

export const TEST_STORE: TestStore = process.env.BERTH_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/** The server that holds the test databases (trust auth on this machine and in CI). */
export const PG_ADMIN_URL = process.env.BERTH_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Every database this run makes starts with this; `scripts/test.mjs` names the run
 * (BERTH_TEST_RUN) and drops what its tests left, never another run's databases.
 */
export const TEST_DB_PREFIX = `berth_test_${process.env.BERTH_TEST_RUN ?? 'adhoc'}_`;

let counter = 0;

export interface TestDatabase {
  /** What `berth server --database` takes. */
  url: string;
  drop(): Promise<void>;
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A new empty PostgreSQL database. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `${TEST_DB_PREFIX}${process.pid}_${Date.now().toString(36)}_${counter++}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {}),
  };
}

const byDataDir = new Map<string, Promise<TestDatabase>>();

/**
 * The database of the server on `dataDir`: on PostgreSQL a new one the first time, the same one
 * when a server starts again on that data directory (a restart); undefined on SQLite, whose file
 * lives in the data directory. Databases not dropped by their test are dropped by
 * `scripts/test.mjs` after the run.
 */
export async function serverDatabase(dataDir: string): Promise<TestDatabase | undefined> {
  if (TEST_STORE !== 'postgres') return undefined;
  let db = byDataDir.get(dataDir);
  if (!db) byDataDir.set(dataDir, (db = createTestDatabase()));
  return db;
}

/**
 * Why PostgreSQL cannot be tested here (PG_ADMIN_URL refuses a connection), or undefined when it
 * can: the suites that loop over both stores in one process skip PostgreSQL's part saying so.
 */
export async function postgresUnreachable(): Promise<string | undefined> {
  try {
    await admin((c) => c.query('SELECT 1'));
    return undefined;
  } catch (e) {
    return `PostgreSQL at ${new URL(PG_ADMIN_URL).host} cannot be reached (${e instanceof Error ? e.message : String(e)})`;
  }
}
