/**
 * Reaching into a test server's store, on either store: its own Kysely handle, its table names,
 * job rows written straight in, and a trigger that makes certain inserts fail (to see a change rolled back with its event).
 */
import { sql } from 'kysely';
import type { JobRecord } from '../../src/domain/job.js';
import type { RunningServer } from '../../src/server/run.js';
import { insertJobs, type NewJob } from '../../src/store/queries/jobs.js';
import type { Store } from '../../src/store/store.js';

export const storeOf = (server: { server: RunningServer } | RunningServer): Store =>
  ('server' in server ? server.server : server).context.store;

/**
 * Writes a job row straight into the store (`true`, no requests; `fields` override), bypassing
 * submission: the server's controller does not know it and leaves it alone.
 */
export async function seedJob(store: Store, fields: Partial<NewJob> = {}): Promise<JobRecord> {
  const [record] = await insertJobs(
    store.db,
    [
      {
        project: 'default',
        name: 'seeded',
        clusterQueue: 'default',
        target: 'local',
        priority: 0,
        spec: {
          command: ['true'],
          env: {},
          timeoutSeconds: null,
          requests: {},
          resources: [],
          dependsOn: [],
        },
        idempotencyKey: null,
        createdBy: 'admin',
        reason: 'seeded',
        ...fields,
      },
    ],
    Date.now(),
  );
  if (!record) throw new Error('the seeded job was not inserted');
  return record;
}

/** The tables of the store (berth's, without the store's own). */
export async function tableNames(store: Store): Promise<string[]> {
  const rows =
    store.dialect === 'postgres'
      ? await sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables
          WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`.execute(store.db)
      : await sql<{ name: string }>`SELECT name FROM sqlite_master
          WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`.execute(store.db);
  return rows.rows.map((r) => r.name);
}

/**
 * Makes every insert into `table` whose new row satisfies `when` (SQL over NEW, the same in both
 * dialects) fail with `message`, until `drop` is called.
 */
export async function refuseInserts(
  store: Store,
  name: string,
  table: string,
  when: string,
  message: string,
): Promise<{ drop(): Promise<void> }> {
  const run = (text: string) => sql.raw(text).execute(store.db);
  if (store.dialect === 'postgres') {
    await run(`CREATE FUNCTION ${name}_fn() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF ${when} THEN RAISE EXCEPTION '${message}'; END IF; RETURN NEW; END $$`);
    await run(`CREATE TRIGGER ${name} BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}_fn()`);
    return {
      drop: async () => {
        await run(`DROP TRIGGER ${name} ON ${table}`);
        await run(`DROP FUNCTION ${name}_fn()`);
      },
    };
  }
  await run(
    `CREATE TRIGGER ${name} BEFORE INSERT ON ${table} WHEN ${when} BEGIN SELECT RAISE(ABORT, '${message}'); END`,
  );
  return { drop: () => run(`DROP TRIGGER ${name}`).then(() => {}) };
}
