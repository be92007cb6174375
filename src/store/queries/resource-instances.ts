import type {
  InstanceRecord,
  InstanceState,
  InstanceView,
  Metadata,
} from '../../domain/resource-instance.js';
import type { ResourceInstanceRow } from '../schema.js';
import type { Db } from '../store.js';
import { iso } from './time.js';
import { LIVE_STATE } from './workers.js';

const toInstanceRecord = (r: ResourceInstanceRow): InstanceRecord => ({
  id: Number(r.id),
  jobId: Number(r.job_id),
  type: r.type,
  state: r.state as InstanceState,
  metadata: r.metadata === null ? null : (JSON.parse(r.metadata) as Metadata),
});

const toInstanceView = (r: ResourceInstanceRow): InstanceView => ({
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
  set: Partial<{ state: InstanceState; metadata: Metadata | null; error: string | null }>,
  now: number,
): Promise<void> {
  const { metadata, ...rest } = set;
  await db
    .updateTable('resource_instances')
    .set({
      ...rest,
      ...(metadata === undefined ? {} : { metadata: metadata === null ? null : JSON.stringify(metadata) }),
      updated_at: now,
    })
    .where('id', '=', id)
    .execute();
}

/** The newest 1,000 instances (in `state` if given), newest first, without metadata. */
export async function listInstances(db: Db, state?: InstanceState): Promise<InstanceView[]> {
  let q = db.selectFrom('resource_instances').selectAll();
  if (state) q = q.where('state', '=', state);
  return (await q.orderBy('id', 'desc').limit(1000).execute()).map(toInstanceView);
}

/** Instances whose destruction is not confirmed: reconciled with their well on start. */
export async function loadLiveInstances(db: Db): Promise<InstanceRecord[]> {
  const rows = await db.selectFrom('resource_instances').selectAll().where(LIVE_STATE).execute();
  return rows.map(toInstanceRecord);
}

/** The instances of each of `jobIds`, in creation order (one query for a whole page of jobs). */
export async function instancesOfJobs(db: Db, jobIds: number[]): Promise<Map<number, InstanceRecord[]>> {
  const out = new Map<number, InstanceRecord[]>();
  if (jobIds.length === 0) return out;
  const rows = await db
    .selectFrom('resource_instances')
    .selectAll()
    .where('job_id', 'in', jobIds)
    .orderBy('id')
    .execute();
  for (const r of rows) {
    const list = out.get(Number(r.job_id)) ?? [];
    list.push(toInstanceRecord(r));
    out.set(Number(r.job_id), list);
  }
  return out;
}
