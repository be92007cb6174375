/**
 * Rolling upgrades on PostgreSQL: replicas of two versions never both write.
 *
 * Every pooled connection of a berth holds, for its whole life, a shared advisory lock keyed by
 * the schema that berth knows (how many migrations), and is used only once it has checked, under
 * that lock, that the database's schema is exactly that one. A newer berth migrates only while it
 * holds the same key exclusively, which PostgreSQL grants only once no connection of a berth of
 * the database's present schema is left: the older replicas have all stopped (or lost their
 * connections). From then on an older berth's new connection waits for the migration, then finds
 * a schema it does not know and refuses in one line, so nothing it sends reaches the database.
 * Until then the newer berth waits, saying so, before it serves or writes anything.
 *
 * The lease (replicas/elector.ts) needs no schema of its own: a berth that cannot hold a
 * connection cannot renew or take it, and a leader's writes are fenced by its term.
 */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import {
  appliedMigrations,
  migrate,
  newerStore,
  refuseNewer,
  type KnownMigrations,
} from './migrations/index.js';

/** The first key of the schema's advisory locks ("brth"); the second is a schema's level. */
const SCHEMA_LOCK = 0x62727468;

export interface SchemaGateOptions {
  known: KnownMigrations;
  /** Said once when the migration waits for the replicas of the older schema to stop. */
  onWaiting?: (line: string) => void;
  /** How often a waiting migration looks again. */
  pollMs?: number;
}

/**
 * Brings the database at `url` to the schema `known` ends with, once no replica of the
 * database's present schema is connected. Refuses (NewerStoreError) a schema newer than `known`.
 */
export async function migrateAlone(url: string, o: SchemaGateOptions): Promise<void> {
  const lock = new pg.Client({
    connectionString: url,
    application_name: 'berth migration',
    connectionTimeoutMillis: 10_000,
  });
  lock.on('error', () => {});
  await lock.connect();
  // Not held to the schema: it reads the schema, and migrates it.
  const pool = new pg.Pool({
    connectionString: url,
    max: 1,
    application_name: 'berth migration',
    connectionTimeoutMillis: 10_000,
  });
  pool.on('error', () => {});
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
  try {
    for (let said = false; ; said = true) {
      const level = (await refuseNewer(db, o.known)).length;
      if (level === o.known.length) return;
      const got = await lock.query<{ got: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS got', [
        SCHEMA_LOCK,
        level,
      ]);
      if (got.rows[0]!.got) {
        try {
          await migrate(db, 'postgres', o.known);
          return;
        } finally {
          await lock.query('SELECT pg_advisory_unlock($1, $2)', [SCHEMA_LOCK, level]);
        }
      }
      if (!said)
        o.onWaiting?.(
          `waiting to migrate the database from ${level === 0 ? 'nothing' : (await appliedMigrations(db)).at(-1)} to ${o.known.at(-1)![0]}: replicas of the berth that knows that schema are still connected; stop them`,
        );
      await new Promise((r) => setTimeout(r, o.pollMs ?? 1000));
    }
  } finally {
    await lock.end().catch(() => {});
    await db.destroy();
  }
}

/**
 * How the store takes a connection from `pool`: a new connection first takes the shared lock of
 * the schema `known` ends with and checks that the database has exactly that schema; one that
 * cannot is closed, and the query that wanted it fails with the reason.
 */
export function schemaHeldConnect(pool: pg.Pool, known: KnownMigrations): () => Promise<pg.PoolClient> {
  const held = new WeakSet<pg.PoolClient>();
  return async () => {
    const client = await pool.connect();
    if (held.has(client)) return client;
    try {
      await holdSchema(client, known);
    } catch (e) {
      client.release(true);
      throw e;
    }
    held.add(client);
    return client;
  };
}

async function holdSchema(client: pg.PoolClient, known: KnownMigrations): Promise<void> {
  // Waits while a newer berth migrates from this schema.
  await client.query('SELECT pg_advisory_lock_shared($1, $2)', [SCHEMA_LOCK, known.length]);
  const { rows } = await client.query<{ name: string }>('SELECT name FROM kysely_migration ORDER BY name');
  const names = new Set(known.map(([name]) => name));
  const unknown = rows.filter((r) => !names.has(r.name));
  if (unknown.length > 0) throw newerStore(unknown.at(-1)!.name, known);
  if (rows.length < known.length)
    throw new Error(
      `the database's schema ends at migration ${rows.at(-1)?.name ?? '(none)'}, older than this berth's ${known.at(-1)![0]}: start this berth again to migrate it`,
    );
}
