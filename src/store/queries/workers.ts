import type { Db } from '../store.js';
import type { WorkerRow } from '../schema.js';
import { iso, isoOrNull } from './time.js';

export const WORKER_STATES = ['creating', 'ready', 'destroying', 'destroyed', 'failed'] as const;
export type WorkerState = (typeof WORKER_STATES)[number];

export interface WorkerView {
  id: number;
  jobId: number;
  factory: string;
  target: string;
  state: WorkerState;
  error: string | null;
  createdAt: string;
  updatedAt: string;
  heartbeatAt: string | null;
}

export const toWorkerView = (r: WorkerRow): WorkerView => ({
  id: Number(r.id),
  jobId: Number(r.job_id),
  factory: r.factory,
  target: r.target,
  state: r.state as WorkerState,
  error: r.error,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
  heartbeatAt: isoOrNull(r.heartbeat_at),
});

export async function insertWorker(
  db: Db,
  w: { jobId: number; factory: string; target: string },
  now: number,
): Promise<number> {
  const row = await db
    .insertInto('workers')
    .values({
      job_id: w.jobId,
      factory: w.factory,
      target: w.target,
      state: 'creating',
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

export async function updateWorker(
  db: Db,
  id: number,
  set: Partial<{ state: WorkerState; handle: string | null; error: string | null; heartbeat_at: number }>,
  now: number,
): Promise<void> {
  await db
    .updateTable('workers')
    .set({ ...set, updated_at: now })
    .where('id', '=', id)
    .execute();
}

export async function listWorkerRows(db: Db, state?: WorkerState): Promise<WorkerRow[]> {
  let q = db.selectFrom('workers').selectAll();
  if (state) q = q.where('state', '=', state);
  return q.orderBy('id', 'desc').limit(1000).execute();
}

/** Workers whose destruction is not confirmed: reconciled with their factory on start. */
export async function loadLiveWorkerRows(db: Db): Promise<WorkerRow[]> {
  return db
    .selectFrom('workers')
    .selectAll()
    .where('state', 'in', ['creating', 'ready', 'destroying'])
    .execute();
}

/** The latest worker of each of `jobIds` (one query for a whole page of jobs). */
export async function latestWorkers(db: Db, jobIds: number[]): Promise<Map<number, WorkerRow>> {
  const out = new Map<number, WorkerRow>();
  if (jobIds.length === 0) return out;
  const rows = await db
    .selectFrom('workers')
    .selectAll()
    .where('job_id', 'in', jobIds)
    .orderBy('id')
    .execute();
  for (const r of rows) out.set(Number(r.job_id), r); // ascending ids: the last one wins
  return out;
}
