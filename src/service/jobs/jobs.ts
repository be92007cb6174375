/**
 * The jobs a caller may see and what may be done to them once submitted (submit-job.ts makes
 * them): one job (404 for another project's), a project's list with its cursor, a job's events,
 * its cancel; and `write`, the unit on the group commit every job write shares.
 */
import { BadRequestError, ConflictError, NotFoundError } from '../../domain/errors.js';
import { isTerminal, type Job, type JobRecord, type JobState } from '../../domain/job.js';
import { decodeCursor, encodeCursor, jobKey, type JobSort } from '../../domain/job-order.js';
import type { Principal } from '../../domain/user.js';
import { appendEvent, listJobEvents, type EventView } from '../../store/queries/events.js';
import { findJob, listJobs as listJobRecords, updateJob } from '../../store/queries/jobs.js';
import { countJobs } from '../../store/queries/job-counts.js';
import type { Db } from '../../store/store.js';
import { commitUnit, type Announce } from '../live/notices.js';
import { countTasks, withArraySummaries } from './array-summaries.js';
import { actorName, requireProject } from '../tenancy/access.js';
import { audit } from '../tenancy/audit.js';
import { type ServiceContext } from '../context.js';
import { jobView, jobViews } from './job-views.js';
import { missingJob } from '../upkeep/retention.js';

/**
 * Loads a job the caller may see (404 otherwise, so ids of other projects reveal nothing). Its
 * logs and artifacts are read under the same check.
 */
export async function visibleJob(
  ctx: ServiceContext,
  p: Principal,
  id: number,
  needed: 'viewer' | 'member' = 'viewer',
): Promise<JobRecord> {
  const job = await findJob(ctx.store.db, id);
  const notFound = new NotFoundError(`job ${id} not found`);
  // A job the retention removed says so, and when it ended (service/upkeep/retention.ts).
  if (!job) throw await missingJob(ctx, id);
  if (p.kind === 'job') {
    if (p.jobId !== id) throw notFound;
    return job;
  }
  // Admins see every job, also one of a deleted project (filed under its archive name).
  if (p.kind === 'user' && p.user.admin) return job;
  try {
    await requireProject(
      ctx.store.db,
      p,
      job.project,
      needed,
      needed === 'member' ? 'changing jobs' : 'reading jobs',
    );
  } catch (e) {
    if (e instanceof NotFoundError) throw notFound;
    throw e;
  }
  return job;
}

export async function getJob(ctx: ServiceContext, p: Principal, id: number): Promise<Job> {
  return jobView(ctx, p, await visibleJob(ctx, p, id));
}

export interface JobListQuery {
  states?: JobState[];
  sort?: JobSort;
  /** From the previous page's `nextCursor`. */
  cursor?: string;
  /** Older API: only jobs with a smaller id (newest first only). */
  before?: number;
  limit?: number;
  /** Each array as one entry (its first task, with `array` saying how its tasks stand). */
  collapse?: boolean;
  /** Only this array's tasks. */
  array?: number;
}

export interface JobList {
  jobs: Job[];
  /** Jobs matching the state filter, on every page. */
  total: number;
  /** Where the next page starts; absent on the last page. */
  nextCursor?: string;
}

export async function listJobs(
  ctx: ServiceContext,
  p: Principal,
  project: string,
  q: JobListQuery,
): Promise<JobList> {
  const db = ctx.store.db;
  await requireProject(db, p, project, 'viewer', 'reading jobs');
  const sort = q.sort ?? '-id';
  let after = q.cursor === undefined ? undefined : decodeCursor(q.cursor, sort);
  if (q.before !== undefined) {
    if (after || sort !== '-id')
      throw new BadRequestError('before: only for the default order without a cursor; page with cursor');
    after = { key: q.before, id: q.before };
  }
  const limit = q.limit ?? 100;
  // One more than asked: whether it exists says whether there is a next page.
  if (q.collapse && q.array !== undefined)
    throw new BadRequestError(
      "give either collapse (arrays as one entry) or array (one array's tasks), not both",
    );
  const records = await listJobRecords(db, {
    project,
    states: q.states,
    sort,
    after,
    limit: limit + 1,
    collapse: q.collapse,
    arrayId: q.array,
  });
  const page = records.slice(0, limit);
  const last = page.at(-1);
  const jobs = await jobViews(ctx, p, page);
  if (q.collapse) await withArraySummaries(db, page, jobs);
  return {
    jobs,
    total:
      q.array === undefined
        ? await countJobs(db, project, q.states)
        : await countTasks(db, q.array, q.states),
    nextCursor: records.length > limit && last ? encodeCursor(sort, jobKey(sort, last)) : undefined,
  };
}

/**
 * Records the request to cancel, with its event, and announces it (service/live/notices.ts): the controller
 * stops the job — here, or on the leading replica.
 */
export async function cancelJob(ctx: ServiceContext, p: Principal, id: number): Promise<Job> {
  const job = await visibleJob(ctx, p, id, 'member');
  if (isTerminal(job.state)) throw new ConflictError(`job ${id} has already finished (${job.state})`);
  const by = actorName(p);
  const reason = `cancelled by ${by}`;
  await write(ctx, async (db, announce) => {
    await updateJob(db, id, { cancelRequested: true });
    const event = { subjectKind: 'job', subject: String(id), project: job.project, jobId: id };
    const now = ctx.now();
    await appendEvent(db, { ...event, type: 'cancel-requested', message: reason }, now);
    await audit(db, p, { action: 'job.cancel', subject: String(id), project: job.project }, now);
    announce({ kind: 'cancel', id, project: job.project, state: job.state, by });
  });
  return jobView(ctx, p, (await findJob(ctx.store.db, id))!);
}

/**
 * One unit on the group commit the submissions share (a plain transaction without one); what it
 * announces is heard once it has committed (service/live/notices.ts).
 */
export function write<T>(ctx: ServiceContext, fn: (db: Db, announce: Announce) => Promise<T>): Promise<T> {
  return commitUnit(ctx, fn, { grouped: true });
}

export async function jobEvents(ctx: ServiceContext, p: Principal, id: number): Promise<EventView[]> {
  await visibleJob(ctx, p, id);
  return listJobEvents(ctx.store.db, id);
}
