import { JOB_STATES, type Job, type JobSpec, type JobState } from '../../domain/job.js';
import { byPriority, compareJobs, type JobKey, type JobSort } from '../../domain/job-order.js';
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
  /** Only jobs in these states (all when absent or empty). */
  states?: JobState[];
  sort: JobSort;
  /** Only jobs after this place in the order (the previous page's last job). */
  after?: JobKey;
  limit: number;
}

/**
 * A page of a project's jobs in any order, each read from an index so a page costs the same with
 * 100,000 jobs as with 10: one index range per state (`state IN (…)` would make SQLite gather and
 * sort every row of those states), merged here. Without a state filter the id orders use
 * (project, id); the priority orders go through every state.
 */
export async function listJobRows(db: Db, q: JobPage): Promise<JobRow[]> {
  const filter = [...new Set(q.states ?? [])];
  const states: (JobState | undefined)[] =
    filter.length > 0 ? filter : byPriority(q.sort) ? [...JOB_STATES] : [undefined];
  const rows: JobRow[] = [];
  for (const state of states) {
    rows.push(...(byPriority(q.sort) ? await byPriorityIn(db, q, state!) : await byIdIn(db, q, state)));
  }
  return states.length === 1 ? rows : rows.sort(compareJobs(q.sort)).slice(0, q.limit);
}

function inProject(db: Db, project: string, state: JobState | undefined) {
  const query = db.selectFrom('jobs').where('project', '=', project);
  return state === undefined ? query : query.where('state', '=', state);
}

async function byIdIn(db: Db, q: JobPage, state: JobState | undefined): Promise<JobRow[]> {
  const desc = q.sort === '-id';
  let query = inProject(db, q.project, state).selectAll();
  if (q.after) query = query.where('id', desc ? '<' : '>', q.after.id);
  return query
    .orderBy('id', desc ? 'desc' : 'asc')
    .limit(q.limit)
    .execute();
}

/**
 * One state in a priority order, ties by newest. The index is (project, state, priority, id):
 * the list takes one priority at a time (newest first within it, an index range), then seeks the
 * next priority, so a page costs a few index seeks whatever the direction.
 */
async function byPriorityIn(db: Db, q: JobPage, state: JobState): Promise<JobRow[]> {
  const desc = q.sort === '-priority';
  const nextPriority = async (after: number | undefined): Promise<number | undefined> => {
    let query = inProject(db, q.project, state).select('priority');
    if (after !== undefined) query = query.where('priority', desc ? '<' : '>', after);
    const row = await query
      .orderBy('priority', desc ? 'desc' : 'asc')
      .limit(1)
      .executeTakeFirst();
    return row?.priority;
  };
  const out: JobRow[] = [];
  let priority = q.after ? q.after.key : await nextPriority(undefined);
  let below = q.after?.id;
  while (priority !== undefined && out.length < q.limit) {
    let query = inProject(db, q.project, state).selectAll().where('priority', '=', priority);
    if (below !== undefined) query = query.where('id', '<', below);
    out.push(
      ...(await query
        .orderBy('id', 'desc')
        .limit(q.limit - out.length)
        .execute()),
    );
    if (out.length < q.limit) priority = await nextPriority(priority);
    below = undefined;
  }
  return out;
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
