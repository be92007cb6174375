import type { Job, JobSpec, JobState } from '../../domain/job.js';
import type { JobRow } from '../schema.js';
import type { Db } from '../store.js';
import { iso, isoOrNull } from './time.js';

export interface NewJob {
  project: string;
  name: string;
  clusterQueue: string;
  target: string;
  priority: number;
  spec: JobSpec;
  idempotencyKey: string | null;
  createdBy: string;
  reason: string;
}

export async function insertJob(db: Db, j: NewJob, now: number): Promise<JobRow> {
  return db
    .insertInto('jobs')
    .values({
      project: j.project,
      name: j.name,
      state: 'queued',
      reason: j.reason,
      cluster_queue: j.clusterQueue,
      target: j.target,
      priority: j.priority,
      spec: JSON.stringify(j.spec),
      idempotency_key: j.idempotencyKey,
      created_by: j.createdBy,
      cancel_requested: 0,
      cleaned_up: 0,
      attempts: 0,
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findJobRow(db: Db, id: number): Promise<JobRow | undefined> {
  return db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findJobByKey(db: Db, project: string, key: string): Promise<JobRow | undefined> {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('project', '=', project)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
}

/** The rows of `ids` that exist, in no particular order. */
export async function findJobRows(db: Db, ids: number[]): Promise<JobRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('jobs').selectAll().where('id', 'in', ids).execute();
}

export async function existingJobIds(db: Db, project: string, ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .selectFrom('jobs')
    .select('id')
    .where('project', '=', project)
    .where('id', 'in', ids)
    .execute();
  return new Set(rows.map((r) => Number(r.id)));
}

export interface JobPage {
  project: string;
  states?: JobState[];
  /** Return jobs with id < before (newest first paging). */
  before?: number;
  limit: number;
}

export async function listJobRows(db: Db, q: JobPage): Promise<JobRow[]> {
  let query = db.selectFrom('jobs').selectAll().where('project', '=', q.project);
  if (q.states && q.states.length > 0) query = query.where('state', 'in', q.states);
  if (q.before !== undefined) query = query.where('id', '<', q.before);
  return query.orderBy('id', 'desc').limit(q.limit).execute();
}

/** Unfinished jobs, and finished ones whose cleanup is not confirmed: the controller's model. */
export async function loadActiveJobRows(db: Db): Promise<JobRow[]> {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('cleaned_up', '=', 0) // every unfinished job is also not cleaned up
    .orderBy('id')
    .execute();
}

export type JobUpdate = Partial<{
  state: JobState;
  reason: string;
  exit_code: number | null;
  borrowed: string | null;
  cancel_requested: number;
  cleaned_up: number;
  attempts: number;
  admitted_at: number | null;
  started_at: number | null;
  finished_at: number | null;
}>;

export async function updateJob(db: Db, id: number, set: JobUpdate): Promise<void> {
  await db.updateTable('jobs').set(set).where('id', '=', id).execute();
}

export function toJob(
  r: JobRow,
  extra: Pick<Job, 'position' | 'projectPosition' | 'blockers' | 'resources' | 'worker'>,
): Job {
  const spec = JSON.parse(r.spec) as JobSpec;
  return {
    id: Number(r.id),
    project: r.project,
    name: r.name,
    state: r.state as JobState,
    reason: r.reason,
    position: extra.position,
    projectPosition: extra.projectPosition,
    blockers: extra.blockers,
    exitCode: r.exit_code,
    clusterQueue: r.cluster_queue,
    target: r.target,
    priority: r.priority,
    priorityClass: spec.priorityClass ?? null,
    requests: spec.requests,
    borrowed: r.borrowed === null ? null : (JSON.parse(r.borrowed) as Record<string, string>),
    resources: extra.resources,
    worker: extra.worker,
    command: spec.command,
    env: spec.env,
    timeoutSeconds: spec.timeoutSeconds,
    dependsOn: spec.dependsOn,
    createdBy: r.created_by,
    attempts: r.attempts,
    cancelRequested: r.cancel_requested === 1,
    createdAt: iso(r.created_at),
    admittedAt: isoOrNull(r.admitted_at),
    startedAt: isoOrNull(r.started_at),
    finishedAt: isoOrNull(r.finished_at),
    cleanedUp: r.cleaned_up === 1,
  };
}
