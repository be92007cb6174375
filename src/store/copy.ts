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
  ['priority_classes', null],
  ['jobs', 'id'],
  ['events', 'id'],
  ['workers', 'id'],
  ['resource_instances', 'id'],
  // Who changed what: it moves with the installation (migration 0012).
  ['audit_log', 'id'],
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
  logs: AsyncIterable<{ jobId: number; chunks: AsyncIterable<string> }>;
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
      let any = false;
      for await (const data of chunks) {
        if (!data) continue;
        await tx.insertInto('job_logs').values({ job_id: jobId, data }).execute();
        report.logs.bytes += Buffer.byteLength(data);
        any = true;
      }
      if (any) report.logs.jobs++;
      if (report.logs.jobs % 100 === 0 && any) progress.table('job logs', report.logs.jobs);
    }
  });
  return report;
}
