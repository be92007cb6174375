/**
 * The history of `BERTH_BENCH_HISTORY_STORE=postgres npm run bench -- history` (bench/history.ts)
 * on PostgreSQL: the same rows as bench/history-seed.ts writes into SQLite — its statements, its
 * job counts and rollups, only the series of job numbers is PostgreSQL's (generate_series) — into
 * the database of a stopped server whose first start migrated it; and the same job logs, as rows
 * of `job_logs` (where PostgreSQL's log store keeps them, one row an upload) instead of files.
 *
 * Speed: each statement is an INSERT … SELECT run inside PostgreSQL (no row crosses into
 * JavaScript), in transactions of CHUNK jobs, with synchronous_commit off. The seeded tables'
 * indexes, their primary keys and unique constraints (those no foreign key leans on: none does)
 * and their triggers are dropped while they fill and made again after (one sorted build each), the
 * job counts summed once. Then the id sequences are set past the rows (the server's next job is
 * N + 1), the tables vacuumed and analyzed, as autovacuum would have left a store that grew over
 * months (a bulk load has no statistics for the planner, no visibility map, no hint bits: the
 * first reads would write them), and a checkpoint taken, so that no measurement pays for the
 * seed's writes. All of it is counted in the seed's seconds.
 */
import pg from 'pg';
import {
  chunks,
  JOB_COUNTS,
  logTextSql,
  ROLLUPS,
  SEEDED_TABLES,
  seeded,
  seedStatements,
  timeline,
  type HistoryShape,
  type SeedDialect,
  type SeedFigures,
} from './history-seed.js';

/** PostgreSQL's part of the statements: generate_series counts the jobs, parameters by number. */
const POSTGRES: SeedDialect = {
  series: 'SELECT generate_series($1::bigint, $2::bigint)',
  start: '$3::bigint',
  step: '$4::bigint',
};

/** Every table the seed writes, the rollups' and the job counts' too. */
const WRITTEN = [...SEEDED_TABLES, 'job_counts', ...ROLLUPS.map(([table]) => table)];

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: 'berth-bench-seed' });
  await client.connect();
  // A crash here loses a benchmark's scratch database, nothing else.
  await client.query(
    `SET synchronous_commit = off; SET maintenance_work_mem = '1GB'; SET work_mem = '256MB'`,
  );
  return client;
}

async function inTransaction(client: pg.Client, fn: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  try {
    await fn();
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  }
}

/**
 * The seeded tables' primary keys and unique constraints, other indexes and triggers, in the order
 * they are made again: how to drop each (in the reverse order) and how to make it.
 */
const SCHEMA = `SELECT drop, make FROM (
    SELECT 1 AS ord, format('ALTER TABLE %s DROP CONSTRAINT %I', conrelid::regclass, conname) AS drop,
      format('ALTER TABLE %s ADD CONSTRAINT %I %s', conrelid::regclass, conname, pg_get_constraintdef(oid)) AS make
    FROM pg_constraint c WHERE conrelid = ANY($1::regclass[]) AND contype IN ('p', 'u')
      AND NOT EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = c.conindid)
    UNION ALL
    SELECT 2, format('DROP INDEX %s', indexrelid::regclass), pg_get_indexdef(indexrelid)
    FROM pg_index x WHERE indrelid = ANY($1::regclass[])
      AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)
    UNION ALL
    SELECT 3, format('DROP TRIGGER %I ON %s', tgname, tgrelid::regclass), pg_get_triggerdef(oid)
    FROM pg_trigger WHERE tgrelid = ANY($1::regclass[]) AND NOT tgisinternal
  ) AS x ORDER BY ord, make`;

/** A statement for each sequence of the tables' columns: on past the largest id there. */
const SEQUENCES = `SELECT format('SELECT setval(%L, coalesce(max(%I), 0) + 1, false) FROM %I', seq, column_name, table_name)
  FROM (SELECT table_name, column_name, pg_get_serial_sequence(quote_ident(table_name), column_name) AS seq
    FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ANY($1)) AS c
  WHERE seq IS NOT NULL`;

/** Vacuums and analyzes `tables`, then takes a checkpoint (where the role may). */
async function settle(client: pg.Client, tables: string[]): Promise<void> {
  await client.query(`VACUUM (ANALYZE) ${tables.join(', ')}`);
  try {
    await client.query('CHECKPOINT');
  } catch (e) {
    // insufficient_privilege: neither a superuser nor pg_checkpoint's member; the seed stands.
    if ((e as { code?: unknown }).code !== '42501') throw e;
  }
}

/**
 * Seeds `shape.jobs` ended jobs into the PostgreSQL database at `url` (the server stopped), ids
 * from 1: the server's first start made no job. Reports progress through `progress`.
 */
export async function seedHistoryPg(
  url: string,
  shape: HistoryShape,
  progress: (line: string) => void = () => {},
): Promise<SeedFigures> {
  const t0 = performance.now();
  const client = await connect(url);
  const rows: Record<string, number> = {};
  try {
    const first = Number(
      (await client.query<{ id: string }>('SELECT coalesce(max(id), 0) + 1 AS id FROM jobs')).rows[0]!.id,
    );
    if (first !== 1) throw new Error(`the store already holds jobs (next id ${first})`);
    const schema = (await client.query<{ drop: string; make: string }>(SCHEMA, [SEEDED_TABLES])).rows;
    await inTransaction(client, async () => {
      for (const x of [...schema].reverse()) await client.query(x.drop);
    });
    const statements = seedStatements(POSTGRES);
    const { start, step } = timeline(shape);
    for (const [lo, hi] of chunks(shape.jobs)) {
      await inTransaction(client, async () => {
        for (const [table, text] of statements)
          rows[table] =
            (rows[table] ?? 0) + ((await client.query(text, [lo, hi, start, step])).rowCount ?? 0);
      });
      progress(seeded(hi, t0));
    }
    await inTransaction(client, async () => {
      for (const x of schema) await client.query(x.make);
      for (const text of JOB_COUNTS) await client.query(text);
      for (const [table, text] of ROLLUPS) rows[table] = (await client.query(text)).rowCount ?? 0;
      const sequences = await client.query<{ format: string }>(SEQUENCES, [WRITTEN]);
      for (const { format } of sequences.rows) await client.query(format);
    });
    await settle(client, WRITTEN);
    return { seconds: (performance.now() - t0) / 1000, rows, firstId: 1, lastId: shape.jobs };
  } finally {
    await client.end();
  }
}

/**
 * A small log (the job's output, one upload) for each job of `ranges` ([lo, hi], apart and in
 * order), as a row of `job_logs` in the database at `url`, where PostgreSQL's log store keeps it:
 * the same text as bench/history-seed.ts `seedLogs` writes into files. How many were written.
 */
export async function seedLogsPg(url: string, ranges: [lo: number, hi: number][]): Promise<number> {
  const client = await connect(url);
  let n = 0;
  try {
    await inTransaction(client, async () => {
      for (const [lo, hi] of ranges) {
        const written = await client.query(
          `INSERT INTO job_logs (job_id, data)
           SELECT i, convert_to(${logTextSql('i')}, 'UTF8') FROM generate_series($1::bigint, $2::bigint) AS s(i)`,
          [lo, hi],
        );
        n += written.rowCount ?? 0;
      }
    });
    await settle(client, ['job_logs']);
    return n;
  } finally {
    await client.end();
  }
}
