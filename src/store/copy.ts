/**
 * Copies an installation's records from one store to another (SQLite to PostgreSQL): every
 * table, in an order its foreign keys accept, with the same ids, in one transaction on the target
 * (it gets all of it or nothing). `job_counts` is not copied: the target's triggers rebuild it as
 * the jobs go in. What lives beside the SQLite file — job logs, the installation id — is handed
 * over by the caller.
 */
import { sql } from 'kysely';
import type { Database } from './schema.js';
import type { Db, Store } from './store.js';

/** Tables in an order that satisfies their foreign keys, with the column their ids come from. */
const TABLES: [keyof Database, string | null][] = [
  ['users', 'id'],
  ['api_tokens', null],
  ['cluster_queues', null],
  ['projects', null],
  ['project_members', null],
  ['project_privileges', null],
  // Registry logins (0022), sealed with the installation's key: the target must use the same key
  // (its secretKeyFile: the source's DATA_DIR/secret.key), or they do not open there.
  ['registry_credentials', null],
  ['priority_classes', null],
  ['jobs', 'id'],
  ['events', 'id'],
  ['workers', 'id'],
  ['resource_instances', 'id'],
  // Who changed what: it moves with the installation (migration 0012).
  ['audit_log', 'id'],
  // Ended attempts (migration 0014): their log ends are remapped as the logs go in (copyLog).
  ['job_attempts', null],
  // Artifacts' rows (migration 0015); their files stay in DATA/artifacts, where the copy finds them.
  ['job_artifacts', null],
  // The usage ledger, in pages by its id, and its rollups (a row per hour or day and key) (0017).
  ['usage_ledger', 'id'],
  ['usage_hourly', null],
  ['usage_hourly_resources', null],
  ['usage_daily', null],
  ['usage_daily_resources', null],
  // Ranges of jobs the retention removed (0019): a removed job still says why it is gone.
  ['removed_jobs', null],
];

/** Tables that hold anything a user made: a target with rows in one of them is not empty. */
const CONTENT: (keyof Database)[] = ['users', 'cluster_queues', 'projects', 'jobs', 'events'];

/** Rows per INSERT. */
const BATCH = 500;

export interface CopyProgress {
  table(name: string, rows: number): void;
}

export interface CopyExtras {
  /** Settings to write on the target (the installation id). */
  settings: Record<string, string>;
  /** Job logs: for each job with output, its chunks in order. */
  logs: AsyncIterable<{ jobId: number; chunks: AsyncIterable<Buffer> }>;
}

export interface CopyReport {
  rows: Record<string, number>;
  logs: { jobs: number; bytes: number };
}

/** The tables of the target that already hold rows; empty when it may be copied into. */
export async function nonEmptyTables(db: Db): Promise<string[]> {
  const out: string[] = [];
  for (const table of CONTENT) {
    const row = await db
      .selectFrom(table)
      .select(sql<number>`count(*)`.as('n'))
      .executeTakeFirst();
    if (Number(row?.n ?? 0) > 0) out.push(table);
  }
  return out;
}

export async function copyStore(
  source: Store,
  target: Store,
  extras: CopyExtras,
  progress: CopyProgress,
): Promise<CopyReport> {
  const report: CopyReport = { rows: {}, logs: { jobs: 0, bytes: 0 } };
  await target.transaction(async (tx) => {
    for (const [table, idColumn] of TABLES) {
      let rows = 0;
      // Keyset pages by id where there is one, else all at once (those tables are small).
      let after = 0;
      for (;;) {
        let q = source.db.selectFrom(table).selectAll();
        if (idColumn) q = q.where(sql.ref(idColumn), '>', after).orderBy(sql.ref(idColumn)).limit(BATCH);
        const page = (await q.execute()) as Record<string, unknown>[];
        if (page.length === 0) break;
        for (let i = 0; i < page.length; i += BATCH) {
          await tx
            .insertInto(table)
            .values(page.slice(i, i + BATCH))
            .execute();
        }
        rows += page.length;
        progress.table(table, rows);
        if (!idColumn || page.length < BATCH) break;
        after = Number(page.at(-1)![idColumn]);
      }
      if (idColumn && target.dialect === 'postgres') {
        // The next id continues after the last one copied.
        await sql`SELECT setval(pg_get_serial_sequence(${table}, ${idColumn}), coalesce((SELECT max(${sql.ref(idColumn)}) FROM ${sql.table(table)}), 0) + 1, false)`.execute(
          tx,
        );
      }
      report.rows[table] = rows;
    }
    for (const [name, value] of Object.entries(extras.settings)) {
      await tx
        .insertInto('settings')
        .values({ name, value })
        .onConflict((oc) => oc.column('name').doUpdateSet({ value }))
        .execute();
    }
    for await (const { jobId, chunks } of extras.logs) {
      const bytes = await copyLog(tx, jobId, chunks);
      report.logs.bytes += bytes;
      const any = bytes > 0;
      if (any) report.logs.jobs++;
      if (report.logs.jobs % 100 === 0 && any) progress.table('job logs', report.logs.jobs);
    }
  });
  return report;
}

/**
 * Copies one job's log into `job_logs`. An attempt's end in a log file is a byte offset; in
 * `job_logs` it is the id of the attempt's last row: the chunks are cut at those offsets, and each
 * attempt's `log_end` is set to the row that ends there. Returns the bytes copied.
 */
async function copyLog(tx: Db, jobId: number, chunks: AsyncIterable<Buffer>): Promise<number> {
  const ends = await tx
    .selectFrom('job_attempts')
    .select(['attempt', 'log_end'])
    .where('job_id', '=', jobId)
    .orderBy('attempt')
    .execute();
  let pos = 0;
  let lastId = 0;
  let next = 0;
  /** Attempts whose log ends at `pos`, or before it: their end is the last row so far. */
  const settle = async () => {
    for (; next < ends.length && Number(ends[next]!.log_end) <= pos; next++)
      await tx
        .updateTable('job_attempts')
        .set({ log_end: lastId })
        .where('job_id', '=', jobId)
        .where('attempt', '=', ends[next]!.attempt)
        .execute();
  };
  for await (const data of chunks) {
    let buf = data;
    while (buf.length > 0) {
      await settle();
      const cut = next < ends.length ? Number(ends[next]!.log_end) - pos : buf.length;
      const piece = buf.subarray(0, Math.min(cut, buf.length));
      const row = await tx
        .insertInto('job_logs')
        .values({ job_id: jobId, data: piece })
        .returning('id')
        .executeTakeFirstOrThrow();
      lastId = Number(row.id);
      pos += piece.length;
      buf = buf.subarray(piece.length);
    }
  }
  const bytes = pos;
  // Ends past the log's end (none are expected) end with its last row.
  pos = Infinity;
  await settle();
  return bytes;
}
