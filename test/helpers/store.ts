/**
 * The store the suite runs on: SQLite by default, PostgreSQL when BERTH_TEST_STORE=postgres
 * (`npm test` runs the whole suite once on each, as Kysely's tests loop over dialects). On
 * PostgreSQL every server gets a database of its own, a copy of the run's migrated template,
 * dropped when it closes.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { MIGRATIONS } from '../../src/store/migrations/index.js';
import { migrateAlone } from '../../src/store/pg-schema-gate.js';

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

function databaseUrl(name: string): string {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A new PostgreSQL database: empty, or with `migrated` a copy of one this berth's migrations
 * have brought to its schema (`CREATE DATABASE … TEMPLATE`): what a server would make of an
 * empty one at its first start, without migrating it again for every server of the run
 * (130 ms to create, 260–330 ms to migrate, measured on this machine).
 */
export async function createTestDatabase(opts: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const name = `${TEST_DB_PREFIX}${process.pid}_${Date.now().toString(36)}_${counter++}`;
  const template = opts.migrated ? ` TEMPLATE ${await migratedTemplate()}` : '';
  await admin((c) => c.query(`CREATE DATABASE ${name}${template}`));
  return {
    url: databaseUrl(name),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {}),
  };
}

/** The key of the advisory lock under which one test process of a run makes the template. */
const TEMPLATE_LOCK = 0x62727468_7470;

let template: Promise<string> | undefined;

/**
 * The name of the run's migrated database to copy, made by the first test process that asks, the
 * others waiting for it on an advisory lock. Named after the migrations themselves (their names
 * and code), so a template made before a migration changed is never used after: a file run by
 * hand (no BERTH_TEST_RUN) reuses the last one it made while the migrations stay the same. It
 * is built under another name and renamed when complete, and nothing connects to it after, as
 * PostgreSQL requires of a template.
 */
function migratedTemplate(): Promise<string> {
  return (template ??= (async () => {
    const code = createHash('sha256');
    for (const [migration, m] of MIGRATIONS) code.update(`${migration}\n${m.up.toString()}\n`);
    const name = `${TEST_DB_PREFIX}template_${code.digest('hex').slice(0, 12)}`;
    await admin(async (c) => {
      await c.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
      try {
        const made = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
        if (made.rowCount) return;
        const building = `${name}_new`;
        await c.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
        await c.query(`CREATE DATABASE ${building}`);
        await migrateAlone(databaseUrl(building), { known: MIGRATIONS });
        await c.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      } finally {
        await c.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
      }
    });
    return name;
  })());
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
  if (!db) byDataDir.set(dataDir, (db = createTestDatabase({ migrated: true })));
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
