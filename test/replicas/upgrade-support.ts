/** What the rolling-upgrade tests share: the older berth they play, its refusal, the schema. */
import pg from 'pg';
import { MIGRATIONS } from '../../src/store/migrations/index.js';

/** What the release before knew: every migration but the newest. */
export const OLDER_MIGRATIONS = MIGRATIONS.slice(0, -1);

/** The one line of an older berth on a database the newer one migrated. */
export const REFUSAL = `the database was written by a newer berth (its schema has migration ${MIGRATIONS.at(-1)![0]}; this berth knows up to ${OLDER_MIGRATIONS.at(-1)![0]}): run that newer berth, or restore a backup this one took`;

/** `text` on a connection of no berth's (not held to any schema). */
export async function query(url: string, text: string): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text);
  } finally {
    await c.end();
  }
}

/** How many migrations the database has had. */
export const schemaOf = async (url: string): Promise<number> =>
  (await query(url, 'SELECT name FROM kysely_migration')).rowCount ?? 0;
