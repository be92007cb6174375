/**
 * What `berth store backup` and `berth store check` ask of a SQLite file, through a connection of
 * their own beside a running server's: a consistent copy (`VACUUM INTO`, one read transaction, so
 * it never blocks the server's writer nor restarts when the server writes, as the backup API
 * would), the file's integrity, and rows that lost their job.
 */
import BetterSqlite3 from 'better-sqlite3';
import { OBJECT_MEMBERS } from '../domain/names.js';

/** A read-only connection to `file`; closed by the caller. */
export function openReadOnly(file: string): BetterSqlite3.Database {
  const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  return db;
}

/** What a copy holds: its jobs, and the highest job id (every log of a job in it is at or below). */
export interface SnapshotFigures {
  jobs: number;
  lastJobId: number;
}

/** Writes a consistent copy of `file` to `target` (which must not exist), compacted. */
export function snapshot(file: string, target: string): SnapshotFigures {
  const source = openReadOnly(file);
  try {
    source.prepare('VACUUM INTO ?').run(target);
  } finally {
    source.close();
  }
  const copy = openReadOnly(target);
  try {
    const row = copy.prepare('SELECT count(*) AS n, coalesce(max(id), 0) AS last FROM jobs').get() as {
      n: number;
      last: number;
    };
    return { jobs: row.n, lastJobId: row.last };
  } finally {
    copy.close();
  }
}

/** `PRAGMA integrity_check`'s findings: `['ok']` when the file is sound, else up to `max` problems. */
export function integrityOf(db: BetterSqlite3.Database, max = 20): string[] {
  return (db.prepare(`PRAGMA integrity_check(${max})`).all() as { integrity_check: string }[]).map(
    (r) => r.integrity_check,
  );
}

/** Tables whose rows each belong to a job (`job_id`), and which of them should not outlive it. */
const OWNED_BY_JOB = [
  'events',
  'job_attempts',
  'job_artifacts',
  'job_logs',
  'workers',
  'resource_instances',
  'api_tokens',
] as const;

/**
 * Per table, rows that name a job that is not there (the usage ledger is left out: its rows outlive
 * their jobs by design). Tables with none are left out.
 */
export function orphanRows(db: BetterSqlite3.Database): Record<string, number> {
  const out: Record<string, number> = {};
  for (const table of OWNED_BY_JOB) {
    const { n } = db
      .prepare(
        `SELECT count(*) AS n FROM ${table} AS t WHERE t.job_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.id = t.job_id)`,
      )
      .get() as { n: number };
    if (n > 0) out[table] = n;
  }
  return out;
}

/** A usage rollup row a berth before issue #40 could write, and no report can sum. */
export interface BrokenUsageRow {
  table: string;
  hour: number;
  project: string;
  user: string;
  queue: string;
  resource: string;
  amount: unknown;
}

/**
 * Usage rollup rows whose amount is not a number, or whose resource is named as a member of every
 * JavaScript object (migration 0021_usage_repair removes them): up to `limit`, and how many in all.
 */
export function brokenUsageRows(
  db: BetterSqlite3.Database,
  limit = 10,
): { count: number; rows: BrokenUsageRow[] } {
  const rows: BrokenUsageRow[] = [];
  let count = 0;
  const members = OBJECT_MEMBERS.map(() => '?').join(', ');
  for (const table of ['usage_hourly_resources', 'usage_daily_resources']) {
    const where = `WHERE resource IN (${members}) OR typeof(amount_seconds) NOT IN ('real', 'integer')`;
    count += (
      db.prepare(`SELECT count(*) AS n FROM ${table} ${where}`).get(...OBJECT_MEMBERS) as { n: number }
    ).n;
    const found = db
      .prepare(
        `SELECT hour, project, user_name AS user, queue, resource, amount_seconds AS amount FROM ${table} ${where} ORDER BY hour LIMIT ?`,
      )
      .all(...OBJECT_MEMBERS, Math.max(0, limit - rows.length)) as Omit<BrokenUsageRow, 'table'>[];
    rows.push(...found.map((r) => ({ table, ...r })));
  }
  return { count, rows };
}

/** Of `ids`, those with no job row. */
export function missingJobs(db: BetterSqlite3.Database, ids: number[]): number[] {
  const found = new Set<number>();
  const BATCH = 500;
  for (let i = 0; i < ids.length; i += BATCH) {
    const part = ids.slice(i, i + BATCH);
    const rows = db
      .prepare(`SELECT id FROM jobs WHERE id IN (${part.map(() => '?').join(', ')})`)
      .all(...part) as { id: number }[];
    for (const r of rows) found.add(r.id);
  }
  return ids.filter((id) => !found.has(id));
}
