/**
 * Job arrays in the store: a task is a job row naming its array (its first task's id) and index.
 * An array of 100,000 tasks goes in within one transaction in a few large statements, and its
 * tasks' records are made here from the one spec they share rather than read back.
 */
import { CompiledQuery, sql } from 'kysely';
import { JOB_STATES, type JobRecord, type JobState } from '../../domain/job.js';
import type { Db, Dialect } from '../store.js';
import { insertJobs, toInsert, type NewJob } from './jobs.js';
import { dialectOf } from './statement-text.js';

/** Rows per statement: PostgreSQL takes at most 65,535 parameters, SQLite 32,766 (18 per task). */
const TASKS_PER_INSERT = 1000;

/**
 * Inserts one task per index of `indices` (ascending): the first as any job (its idempotency key,
 * if any, guards the whole array), the rest in bulk. Returns the tasks' records, first to last, or
 * undefined when the project already has a job with the first task's idempotency key.
 */
export async function insertArrayTasks(
  db: Db,
  job: NewJob,
  indices: readonly number[],
  now: number,
): Promise<JobRecord[] | undefined> {
  const dialect = dialectOf(db);
  const [first] = await insertJobs(db, [job], now);
  if (!first) return undefined;
  const arrayId = first.id;
  await db
    .updateTable('jobs')
    .set({ array_id: arrayId, array_index: indices[0]! })
    .where('id', '=', arrayId)
    .execute();
  const base = { ...toInsert({ ...job, idempotencyKey: null }, now), array_id: arrayId };
  // Ids follow the first task's: the write transaction is the only writer (SQLite's one writer;
  // on PostgreSQL the ids are taken from the sequence first).
  const ids = await nextIds(db, dialect, arrayId, indices.length - 1);
  // The rows are many and alike: the statement is written here, once per size, rather than by the
  // query builder, which spends longer compiling 100,000 rows than the database inserting them.
  const columns = [...Object.keys(base), 'id', 'array_index'];
  const common = Object.values(base);
  for (let i = 1; i < indices.length; i += TASKS_PER_INSERT) {
    const end = Math.min(indices.length, i + TASKS_PER_INSERT);
    const params: unknown[] = [];
    for (let k = i; k < end; k++) params.push(...common, ids[k - 1]!, indices[k]!);
    await db.executeQuery(CompiledQuery.raw(insertSql(dialect, columns, end - i), params));
  }
  const head: JobRecord = { ...first, arrayId, arrayIndex: indices[0]! };
  return [head, ...ids.map((id, k) => ({ ...head, id, arrayIndex: indices[k + 1]!, idempotencyKey: null }))];
}

/** `INSERT INTO jobs (…) VALUES (…), …` for `rows` rows, in the dialect's placeholders. */
const insertSqlCache = new Map<string, string>();
function insertSql(dialect: Dialect, columns: string[], rows: number): string {
  const key = `${dialect} ${rows} ${columns.join(',')}`;
  let text = insertSqlCache.get(key);
  if (text === undefined) {
    let n = 0;
    const one = () => `(${columns.map(() => (dialect === 'postgres' ? `$${++n}` : '?')).join(', ')})`;
    text = `INSERT INTO jobs (${columns.join(', ')}) VALUES ${Array.from({ length: rows }, one).join(', ')}`;
    insertSqlCache.set(key, text);
  }
  return text;
}

async function nextIds(db: Db, dialect: Dialect, after: number, n: number): Promise<number[]> {
  if (n === 0) return [];
  if (dialect === 'sqlite') return Array.from({ length: n }, (_, k) => after + 1 + k);
  const { rows } = await sql<{ id: string }>`
    SELECT nextval(pg_get_serial_sequence('jobs', 'id')) AS id FROM generate_series(1, ${n})`.execute(db);
  return rows.map((r) => Number(r.id));
}

/** The arrays' tasks counted by state (served by jobs_array), per array; every state present. */
export async function countArrayTasks(
  db: Db,
  arrayIds: number[],
): Promise<Map<number, Record<JobState, number>>> {
  const out = new Map<number, Record<JobState, number>>();
  if (arrayIds.length === 0) return out;
  const rows = await db
    .selectFrom('jobs')
    .select(['array_id', 'state', (eb) => eb.fn.countAll<number>().as('n')])
    .where('array_id', 'in', arrayIds)
    .groupBy(['array_id', 'state'])
    .execute();
  for (const id of arrayIds)
    out.set(id, Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>);
  for (const r of rows) out.get(Number(r.array_id))![r.state as JobState] = Number(r.n);
  return out;
}

/** The id of task `index` of array `arrayId`, if it has one. */
export async function findArrayTaskId(db: Db, arrayId: number, index: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('jobs')
    .select('id')
    .where('array_id', '=', arrayId)
    .where('array_index', '=', index)
    .executeTakeFirst();
  return row && Number(row.id);
}

/** The ids of an array's unfinished tasks, first to last. */
export async function unfinishedArrayTaskIds(db: Db, arrayId: number): Promise<number[]> {
  const rows = await db
    .selectFrom('jobs')
    .select('id')
    .where('array_id', '=', arrayId)
    .where('state', 'in', ['queued', 'admitted', 'running'])
    .orderBy('id')
    .execute();
  return rows.map((r) => Number(r.id));
}

/** An array's queued tasks, first to last (a leader taking up an array submitted elsewhere). */
export async function queuedArrayTaskIds(db: Db, arrayId: number): Promise<number[]> {
  const rows = await db
    .selectFrom('jobs')
    .select('id')
    .where('array_id', '=', arrayId)
    .where('state', '=', 'queued')
    .orderBy('id')
    .execute();
  return rows.map((r) => Number(r.id));
}

/** Marks every unfinished task of the array as to be cancelled (`cancel_requested`). */
export async function requestArrayCancel(db: Db, arrayId: number): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ cancel_requested: 1 })
    .where('array_id', '=', arrayId)
    .where('state', 'in', ['queued', 'admitted', 'running'])
    .execute();
}
