import type { Metadata } from '../../wells/well.js';
import type { ResourceInstanceRow } from '../schema.js';
import type { Db } from '../store.js';
import { iso } from './time.js';
import { WORKER_STATES } from './workers.js';

/** Instances share the worker life cycle: creating → ready → destroying → destroyed (or failed). */
export const INSTANCE_STATES = WORKER_STATES;
export type InstanceState = (typeof INSTANCE_STATES)[number];

/** What anyone allowed to see the instance sees: never its metadata. */
export interface InstanceView {
  id: number;
  jobId: number;
  type: string;
  state: InstanceState;
  error: string | null;
  createdAt: string;
  updatedAt: string;
}

export const toInstanceView = (r: ResourceInstanceRow): InstanceView => ({
  id: Number(r.id),
  jobId: Number(r.job_id),
  type: r.type,
  state: r.state as InstanceState,
  error: r.error,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});

export async function insertInstance(db: Db, jobId: number, type: string, now: number): Promise<number> {
  const row = await db
    .insertInto('resource_instances')
    .values({ job_id: jobId, type, state: 'creating', created_at: now, updated_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

export async function updateInstance(
  db: Db,
  id: number,
  set: Partial<{ state: InstanceState; metadata: string | null; error: string | null }>,
  now: number,
): Promise<void> {
  await db
    .updateTable('resource_instances')
    .set({ ...set, updated_at: now })
    .where('id', '=', id)
    .execute();
}

export async function listInstanceRows(db: Db, state?: InstanceState): Promise<ResourceInstanceRow[]> {
  let q = db.selectFrom('resource_instances').selectAll();
  if (state) q = q.where('state', '=', state);
  return q.orderBy('id', 'desc').limit(1000).execute();
}

export async function loadLiveInstanceRows(db: Db): Promise<ResourceInstanceRow[]> {
  return db
    .selectFrom('resource_instances')
    .selectAll()
    .where('state', 'in', ['creating', 'ready', 'destroying'])
    .execute();
}

/** The instances of each of `jobIds`, in creation order (one query for a whole page of jobs). */
export async function instancesOfJobs(db: Db, jobIds: number[]): Promise<Map<number, ResourceInstanceRow[]>> {
  const out = new Map<number, ResourceInstanceRow[]>();
  if (jobIds.length === 0) return out;
  const rows = await db
    .selectFrom('resource_instances')
    .selectAll()
    .where('job_id', 'in', jobIds)
    .orderBy('id')
    .execute();
  for (const r of rows) {
    const list = out.get(Number(r.job_id)) ?? [];
    list.push(r);
    out.set(Number(r.job_id), list);
  }
  return out;
}

export const parseMetadata = (r: ResourceInstanceRow): Metadata | null =>
  r.metadata === null ? null : (JSON.parse(r.metadata) as Metadata);
