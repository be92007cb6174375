/**
 * The history of `npm run bench -- history` (bench/history.ts): N ended jobs written straight into
 * a stopped server's SQLite file, each with the rows a real no-op job leaves (one run through the
 * local factory, read back, gave their shapes): its jobs row, five events (submitted, admitted,
 * worker-creating, started, its end), a destroyed worker, the audit row of its submission, its
 * allocation in the usage ledger; one job in twenty failed once and was retried (an attempt row
 * and a second allocation). The ledger's hourly and daily rollups are summed from the ledger, as
 * the controller's upserts would have left them: every job lives within one hour, so a row lands
 * in one hour and one day.
 *
 * Speed: each statement is an INSERT … SELECT over a recursive CTE, run inside SQLite (no row
 * crosses into JavaScript), in transactions of CHUNK jobs, with the journal off while seeding (a
 * crash here loses a benchmark's scratch file, nothing else) and the WAL put back at the end; the
 * indexes are built after the rows, so they come out packed (a store grown a job at a time has
 * its id-ordered indexes as packed, the others less).
 *
 * The rows' SQL is shared with the PostgreSQL seed (bench/history-seed-pg.ts): `seedStatements`
 * takes the few parts that differ (the series of job numbers, the parameters); booleans are
 * written `CAST(… AS INTEGER)`, which both stores read the same, as their columns are integers.
 */
import BetterSqlite3 from 'better-sqlite3';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { logPath } from '../src/store/log-store.js';

/** Jobs per transaction. */
const CHUNK = 500_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The project every measured call reads: half of all jobs; the rest spread over TEAMS others. */
export const PROJECT = 'p';
const TEAMS = 7;
const USERS = 20;

export interface HistoryShape {
  jobs: number;
  /** Jobs are spread evenly (by id) over the `days` before `now`. */
  days: number;
  now: number;
}

export interface SeedFigures {
  seconds: number;
  /** Rows written per table. */
  rows: Record<string, number>;
  /** The first and last job id written. */
  firstId: number;
  lastId: number;
}

/** The time of job 0 and the ms between two jobs' times: the jobs spread over the shape's days. */
export function timeline(shape: HistoryShape): { start: number; step: number } {
  const span = shape.days * DAY;
  return { start: shape.now - span, step: Math.floor(span / shape.jobs) };
}

/** The chunks of CHUNK jobs [lo, hi] (1-based, inclusive) of `jobs` jobs, in order. */
export function chunks(jobs: number): [lo: number, hi: number][] {
  const out: [number, number][] = [];
  for (let lo = 1; lo <= jobs; lo += CHUNK) out.push([lo, Math.min(jobs, lo + CHUNK - 1)]);
  return out;
}

/** The progress line once jobs 1 to `hi` are in, the seed started at `t0` (performance.now()). */
export function seeded(hi: number, t0: number): string {
  const s = (performance.now() - t0) / 1000;
  return `${hi.toLocaleString('en-US')} jobs in ${s.toFixed(0)} s (${Math.round(hi / s)} jobs/s)`;
}

/** What differs between the stores in the statements of a chunk: all the rest is the same SQL. */
export interface SeedDialect {
  /** The body of the CTE s(i): one row for each job number i from the chunk's lo to its hi. */
  series: string;
  /** The chunk's parameters: the time of job 0 and the ms between two jobs (timeline()). */
  start: string;
  step: string;
}

/** The jobs i of the chunk, with their times: each job's life within one hour. */
const series = (d: SeedDialect) => `WITH RECURSIVE s(i) AS (${d.series}),
  t(i, at) AS (SELECT i, ${d.start} + (i * ${d.step}) FROM s),
  j(i, created, admitted, started, finished, project, queue, who, name, outcome) AS (
    SELECT i, created, created + (i * 7919) % 4000 + 2, created + (i * 7919) % 4000 + 110,
      created + (i * 7919) % 4000 + 1110 + (i * 104729) % 590000,
      CASE WHEN i % 2 = 0 THEN '${PROJECT}' ELSE 'team-' || (i % ${TEAMS}) END,
      CASE WHEN i % 2 = 0 THEN 'work' ELSE 'batch' END,
      'user-' || (i % ${USERS}), 'train-' || (i % 97),
      CASE WHEN i % 50 = 8 THEN 'cancelled' WHEN i % 17 = 5 THEN 'failed' ELSE 'succeeded' END
    FROM (SELECT i, (at / ${HOUR}) * ${HOUR} + (at % ${HOUR}) * 4 / 5 AS created FROM t) AS c)`;

/** The statements of one chunk, in order, in the dialect `d`. */
export function seedStatements(d: SeedDialect): [table: string, sql: string][] {
  const SERIES = series(d);
  return [
    [
      'jobs',
      `${SERIES} INSERT INTO jobs (id, project, name, state, reason, cluster_queue, target, priority, spec,
         created_by, exit_code, cancel_requested, cleaned_up, attempts, retried, created_at, admitted_at,
         started_at, finished_at)
       SELECT i, project, name, outcome,
         CASE outcome WHEN 'succeeded' THEN 'exited with code 0' WHEN 'failed' THEN 'exited with code 1'
           ELSE 'cancelled by ' || who END,
         queue, 'local', (i * 31) % 21 - 10,
         '{"command":["python","train.py","--shard","' || (i % 97) || '"],"env":{},"timeoutSeconds":null,"requests":{"cpu":"1"},"resources":[],"dependsOn":[]}',
         who, CASE outcome WHEN 'succeeded' THEN 0 WHEN 'failed' THEN 1 END, CAST(outcome = 'cancelled' AS INTEGER), 1,
         CAST(i % 20 = 3 AS INTEGER), CAST(i % 20 = 3 AS INTEGER), created, admitted, started, finished
       FROM j`,
    ],
    [
      'events',
      `${SERIES}, e(k, type) AS (VALUES (0, 'submitted'), (1, 'admitted'), (2, 'worker-creating'), (3, 'started'), (4, 'end'))
       INSERT INTO events (at, subject_kind, subject, project, job_id, type, message, data)
       SELECT CASE k WHEN 0 THEN created WHEN 3 THEN started WHEN 4 THEN finished ELSE admitted END,
         'job', CAST(i AS TEXT), project, i, CASE k WHEN 4 THEN outcome ELSE type END,
         CASE k WHEN 0 THEN 'submitted by ' || who || ' to cluster queue ' || queue
           WHEN 1 THEN 'admitted by cluster queue ' || queue
           WHEN 2 THEN 'worker ' || i || ' requested from factory local'
           WHEN 3 THEN 'started on worker ' || i
           ELSE CASE outcome WHEN 'succeeded' THEN 'exited with code 0' WHEN 'failed' THEN 'exited with code 1'
             ELSE 'cancelled by ' || who END END,
         CASE WHEN k = 4 AND outcome <> 'cancelled' THEN '{"exitCode":' || CAST(outcome = 'failed' AS INTEGER) || '}' END
       FROM j CROSS JOIN e`,
    ],
    [
      'workers',
      `${SERIES} INSERT INTO workers (id, job_id, factory, target, state, handle, created_at, updated_at, unregistered)
       SELECT i, i, 'local', 'local', 'destroyed', '{"workdir":"/var/lib/berth/workers/' || i || '","pid":' || (1000 + i % 30000) || '}',
         admitted, finished + 13, 1 FROM j`,
    ],
    [
      'audit_log',
      `${SERIES} INSERT INTO audit_log (at, actor, actor_kind, address, action, subject, project, detail)
       SELECT created, who, 'user', '10.0.' || (i % 7) || '.' || (i % 250), 'job.submit', CAST(i AS TEXT), project,
         '{"name":"' || name || '","target":"local"}' FROM j`,
    ],
    [
      'job_attempts',
      `${SERIES} INSERT INTO job_attempts (job_id, attempt, outcome, charged, reason, exit_code, started_at, ended_at, log_end)
       SELECT i, 1, 'failed', 'job', 'exited with code 1', 1, started - 600, started - 300, 0 FROM j WHERE i % 20 = 3`,
    ],
    [
      'usage_ledger',
      `${SERIES} INSERT INTO usage_ledger (job_id, attempt, project, name, user_name, queue, target, worker_id, workers,
         requests, queued_at, admitted_at, started_at, ended_at, outcome, final)
       SELECT i, a, project, name, who, queue, 'local', i, 1, '{"cpu":"1"}',
         CASE WHEN r THEN created WHEN a = 2 THEN created + 320 ELSE created END,
         CASE WHEN r THEN created + 2 WHEN a = 2 THEN admitted + 320 ELSE admitted END,
         CASE WHEN r THEN created + 10 WHEN a = 2 THEN started + 320 ELSE started END,
         CASE WHEN r THEN created + 310 ELSE finished END,
         CASE WHEN r THEN 'retried' ELSE outcome END, CAST(NOT r AS INTEGER)
       FROM (SELECT j.*, a, a = 1 AND i % 20 = 3 AS r FROM j CROSS JOIN (SELECT 1 AS a UNION ALL SELECT 2) AS n
         WHERE a = 1 OR i % 20 = 3) AS l`,
    ],
  ];
}

/** SQLite's part of the statements: a recursive CTE counts the jobs, parameters by name. */
const SQLITE: SeedDialect = {
  series: 'SELECT :lo UNION ALL SELECT i + 1 FROM s WHERE i < :hi',
  start: ':start',
  step: ':step',
};

/** The tables the statements of a chunk fill, in order. */
export const SEEDED_TABLES = seedStatements(SQLITE).map(([table]) => table);

/** The job counts (kept by triggers, dropped while the rows go in), summed once from the jobs. */
export const JOB_COUNTS = [
  'DELETE FROM job_counts',
  'INSERT INTO job_counts (project, state, n) SELECT project, state, count(*) FROM jobs GROUP BY 1, 2',
];

/** The rollups of the whole ledger, per hour and per day (after every chunk is in): [table, sql]. */
export const ROLLUPS = (['hourly', 'daily'] as const).flatMap((grain): [table: string, sql: string][] => {
  const size = grain === 'hourly' ? HOUR : DAY;
  const from = `FROM usage_ledger GROUP BY 1, 2, 3, 4`;
  const hour = `ended_at / ${size} * ${size}`;
  const count = (outcome: string) => `sum(CAST(outcome = '${outcome}' AS INTEGER))`;
  const outcomes = ['succeeded', 'failed', 'cancelled', 'requeued', 'retried'];
  return [
    [
      `usage_${grain}`,
      `INSERT INTO usage_${grain} (hour, project, user_name, queue, allocations, succeeded, failed, cancelled,
         requeued, retried, wait_ms_sum, wait_count, wait_ms_max, held_ms)
       SELECT ${hour}, project, user_name, queue, count(*), ${outcomes.map(count).join(', ')},
         sum(admitted_at - queued_at), count(*), max(admitted_at - queued_at), sum(ended_at - admitted_at) ${from}`,
    ],
    // One cpu held: 1,000 millicpu × the seconds held.
    [
      `usage_${grain}_resources`,
      `INSERT INTO usage_${grain}_resources (hour, project, user_name, queue, resource, amount_seconds)
       SELECT ${hour}, project, user_name, queue, 'cpu', sum(ended_at - admitted_at) ${from}`,
    ],
  ];
});

/**
 * Seeds `shape.jobs` ended jobs into the SQLite file `dbFile` (the server stopped), ids from 1:
 * the server's first start made no job. Reports progress through `progress`.
 */
export function seedHistory(
  dbFile: string,
  shape: HistoryShape,
  progress: (line: string) => void = () => {},
): SeedFigures {
  const t0 = performance.now();
  const db = new BetterSqlite3(dbFile);
  const rows: Record<string, number> = {};
  try {
    const first = (db.prepare('SELECT coalesce(max(id), 0) + 1 AS id FROM jobs').get() as { id: number }).id;
    if (first !== 1) throw new Error(`the store already holds jobs (next id ${first})`);
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -1000000'); // 1 GB of page cache: the indexes' working set stays in it
    db.pragma('temp_store = MEMORY');
    // The tables' indexes and triggers are dropped while they fill and made again after (one
    // sorted build each instead of a b-tree insert per row), the job counts summed once.
    const schema = db
      .prepare(
        `SELECT type, name, sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND sql IS NOT NULL
           AND tbl_name IN (${SEEDED_TABLES.map(() => '?').join(', ')})`,
      )
      .all(...SEEDED_TABLES) as { type: string; name: string; sql: string }[];
    for (const x of schema) db.exec(`DROP ${x.type.toUpperCase()} ${x.name}`);
    const statements = seedStatements(SQLITE).map(([table, text]) => [table, db.prepare(text)] as const);
    const { start, step } = timeline(shape);
    // BigInts: better-sqlite3 binds a JS number as a REAL, and every id and time would be one.
    const bind = { start: BigInt(start), step: BigInt(step) };
    for (const [lo, hi] of chunks(shape.jobs)) {
      db.transaction(() => {
        for (const [table, statement] of statements)
          rows[table] =
            (rows[table] ?? 0) + statement.run({ ...bind, lo: BigInt(lo), hi: BigInt(hi) }).changes;
      })();
      progress(seeded(hi, t0));
    }
    db.transaction(() => {
      for (const x of schema) db.exec(x.sql);
      for (const text of JOB_COUNTS) db.exec(text);
      for (const [table, text] of ROLLUPS) rows[table] = db.prepare(text).run().changes;
    })();
    db.pragma('journal_mode = WAL');
    return { seconds: (performance.now() - t0) / 1000, rows, firstId: 1, lastId: shape.jobs };
  } finally {
    db.close();
  }
}

/** A job's log (its output, one upload): as the log files hold it, and as SQL of the job number `i`. */
export const logText = (id: number) => `epoch 1/1 shard ${id % 97}: loss 0.${id % 1000}\ndone\n`;
export const logTextSql = (i: string) =>
  `'epoch 1/1 shard ' || (${i} % 97) || ': loss 0.' || (${i} % 1000) || E'\\ndone\\n'`;

/**
 * A small log file (the job's output) for each job of `ranges` ([lo, hi], apart and in order),
 * where the file store keeps it.
 */
export function seedLogs(dataDir: string, ranges: [lo: number, hi: number][]): number {
  const dir = join(dataDir, 'logs');
  let n = 0;
  let made = -1;
  for (const [lo, hi] of ranges)
    for (let id = lo; id <= hi; id++) {
      const path = logPath(dir, id);
      const shard = Math.floor(id / 1000);
      if (shard !== made) mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
      made = shard;
      writeFileSync(path, logText(id));
      n++;
    }
  return n;
}
