import { sql } from 'kysely';
import {
  LIVE_STATES,
  type WorkerHandle,
  type WorkerRecord,
  type WorkerState,
  type WorkerView,
} from '../../domain/worker.js';
import type { WorkerRow } from '../schema.js';
import type { Db } from '../store.js';
import { runFixed, updateById } from './statement-text.js';
import { iso, isoOrNull } from './time.js';

const toWorkerRecord = (r: WorkerRow): WorkerRecord => ({
  id: Number(r.id),
  jobId: Number(r.job_id),
  factory: r.factory,
  target: r.target,
  state: r.state as WorkerState,
  handle: r.handle === null ? null : (JSON.parse(r.handle) as WorkerHandle),
  error: r.error,
});

/** The record without its handle (which only the factory reads), with its times. */
const toWorkerView = (r: WorkerRow): WorkerView => {
  const { handle: _handle, ...rest } = toWorkerRecord(r);
  return {
    ...rest,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
    heartbeatAt: isoOrNull(r.heartbeat_at),
  };
};

export async function insertWorker(
  db: Db,
  w: { jobId: number; factory: string; target: string; registration?: string; members?: number },
  now: number,
): Promise<number> {
  const values = [w.jobId, w.factory, w.target, w.registration ?? null, w.members ?? 1, 'creating', now, now];
  const [row] = await runFixed<{ id: number | string }>(
    db,
    'insert worker',
    (p) =>
      'INSERT INTO workers (job_id, factory, target, registration, unregistered, state, created_at, updated_at) ' +
      `VALUES (${values.map((_, i) => p(i + 1)).join(', ')}) RETURNING id`,
    values,
  );
  if (!row) throw new Error('the worker was not inserted');
  return Number(row.id);
}

export async function updateWorker(
  db: Db,
  id: number,
  set: Partial<{ state: WorkerState; handle: WorkerHandle | null; error: string | null; jobId: number }>,
  now: number,
): Promise<void> {
  const { handle, jobId, ...rest } = set;
  await updateById(db, 'workers', id, {
    ...rest,
    job_id: jobId,
    handle: handle === undefined ? undefined : handle === null ? null : JSON.stringify(handle),
    updated_at: now,
  });
}

/**
 * Spends one use of the registration credential (by `hash`) of live worker `id`: a gang's worker
 * has one per member. The last use puts `next` (a pilot's worker credential, hashed) or nothing in
 * its place. Its job's id and target, or undefined when the worker is gone or the credential
 * wrong or spent.
 */
export async function spendRegistration(
  db: Db,
  id: number,
  hash: string,
  now: number,
  next: (target: string, jobId: number) => Promise<string | null>,
): Promise<{ jobId: number; target: string } | undefined> {
  // One statement takes one use, so that members registering at once each get theirs.
  const used = await db
    .updateTable('workers')
    .set((eb) => ({ unregistered: eb('unregistered', '-', 1), updated_at: now }))
    .where('id', '=', id)
    .where('registration', '=', hash)
    .where('unregistered', '>=', 1)
    .where('state', 'in', ['creating', 'ready'])
    .returning(['job_id', 'target', 'unregistered'])
    .executeTakeFirst();
  if (!used) return undefined;
  const jobId = Number(used.job_id);
  if (used.unregistered === 0) {
    await db
      .updateTable('workers')
      .set({ registration: await next(used.target, jobId) })
      .where('id', '=', id)
      .execute();
  }
  return { jobId, target: used.target };
}

/** Whether live worker `id` holds the credential `hash` (a pilot's worker credential). */
export async function hasCredential(db: Db, id: number, hash: string): Promise<boolean> {
  return (await liveWithCredential(db, id, hash)) !== undefined;
}

/** The live worker running job `jobId` whose credential has this hash, if any. */
export async function workerWithCredential(db: Db, jobId: number, hash: string): Promise<number | undefined> {
  const row = await db
    .selectFrom('workers')
    .select('id')
    .where('job_id', '=', jobId)
    .where('registration', '=', hash)
    .where('state', 'in', ['creating', 'ready'])
    .executeTakeFirst();
  return row?.id;
}

function liveWithCredential(db: Db, id: number, hash: string) {
  return db
    .selectFrom('workers')
    .select(['job_id', 'target'])
    .where('id', '=', id)
    .where('registration', '=', hash)
    .where('state', 'in', ['creating', 'ready'])
    .executeTakeFirst();
}

/** The newest 1,000 workers (in `state` if given), newest first. */
export async function listWorkers(db: Db, state?: WorkerState): Promise<WorkerView[]> {
  let q = db.selectFrom('workers').selectAll();
  if (state) q = q.where('state', '=', state);
  return (await q.orderBy('id', 'desc').limit(1000).execute()).map(toWorkerView);
}

/**
 * domain/worker.ts LIVE_STATES as the predicate of the partial indexes workers_live and
 * resource_instances_live, written as it is there: SQLite uses a partial index only for a query
 * whose WHERE implies the index's, and `state IN (?, ?, ?)` with bound values does not, so the
 * restart read every worker and instance ever made (10 million ended jobs: 4 s of a restart).
 */
export const LIVE_STATE = sql<boolean>`state IN (${sql.raw(LIVE_STATES.map((s) => `'${s}'`).join(', '))})`;

/** Workers whose destruction is not confirmed: reconciled with their factory on start. */
export async function loadLiveWorkers(db: Db): Promise<WorkerRecord[]> {
  const rows = await db.selectFrom('workers').selectAll().where(LIVE_STATE).execute();
  return rows.map(toWorkerRecord);
}

/**
 * The worker each of `jobIds` ran its last allocation on, as the usage ledger recorded it when
 * that allocation ended: a pilot worker moves on to other jobs, so the worker's own `job_id`
 * names only its latest (two queries for a whole page of jobs).
 */
export async function workersOfLastAllocations(db: Db, jobIds: number[]): Promise<Map<number, WorkerRecord>> {
  const out = new Map<number, WorkerRecord>();
  if (jobIds.length === 0) return out;
  const allocations = await db
    .selectFrom('usage_ledger')
    .select(['job_id', 'worker_id'])
    .where('job_id', 'in', jobIds)
    .where('worker_id', 'is not', null)
    .orderBy('attempt')
    .execute();
  const workerOf = new Map(allocations.map((a) => [Number(a.job_id), Number(a.worker_id)])); // the last attempt wins
  if (workerOf.size === 0) return out;
  const rows = await db
    .selectFrom('workers')
    .selectAll()
    .where('id', 'in', [...new Set(workerOf.values())])
    .execute();
  const byId = new Map(rows.map((r) => [Number(r.id), toWorkerRecord(r)]));
  for (const [job, worker] of workerOf) {
    const w = byId.get(worker);
    if (w) out.set(job, w);
  }
  return out;
}

/** The latest worker of each of `jobIds` (one query for a whole page of jobs). */
export async function latestWorkers(db: Db, jobIds: number[]): Promise<Map<number, WorkerRecord>> {
  const out = new Map<number, WorkerRecord>();
  if (jobIds.length === 0) return out;
  const rows = await db
    .selectFrom('workers')
    .selectAll()
    .where('job_id', 'in', jobIds)
    .orderBy('id')
    .execute();
  for (const r of rows) out.set(Number(r.job_id), toWorkerRecord(r)); // ascending ids: the last one wins
  return out;
}
