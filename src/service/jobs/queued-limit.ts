/**
 * A project's `maxQueued` (or its cluster queue's `maxQueuedPerProject`): the most of its jobs
 * that may wait for admission at once, as Slurm's MaxSubmitJobs bounds an account, so that one
 * project's runaway script cannot queue millions of jobs ahead of everyone. A submission past it
 * gets 429 with Retry-After.
 *
 * The count comes from the leader's in-memory model (a follower reads the store's exact per-state
 * counts), plus the submissions this replica has let through and not yet seen committed, so that
 * a burst of concurrent submissions cannot overshoot the limit on one replica.
 */
import { TooManyRequestsError } from '../../domain/errors.js';
import type { Project } from '../../domain/project.js';
import type { QueueModel } from '../../controller/port.js';
import { countJobs } from '../../store/queries/job-counts.js';
import type { JobRuntime, ServiceContext } from '../context.js';

/** What a refused client is told to wait before it tries again. */
export const QUEUED_RETRY_AFTER_SECONDS = 10;

/** Submissions let through and not yet committed, per context and project. */
const inFlight = new WeakMap<ServiceContext, Map<string, number>>();

/** The limit that applies to the project's jobs, or null. */
export function queuedLimit(project: Project, queue: QueueModel | undefined): number | null {
  return project.maxQueued ?? queue?.maxQueuedPerProject ?? null;
}

/**
 * Reserves places for `count` more queued jobs of the project, or throws TooManyRequestsError naming
 * the limit. The caller must call the returned release once the submission is committed (or has
 * failed): from then on the job counts among the queued ones itself.
 */
export async function reserveQueued(
  ctx: ServiceContext,
  rt: JobRuntime,
  project: Project,
  queue: QueueModel | undefined,
  /** How many jobs the submission queues (an array's tasks). */
  count = 1,
): Promise<() => void> {
  const limit = queuedLimit(project, queue);
  if (limit === null) return () => {};
  let pending = inFlight.get(ctx);
  if (!pending) inFlight.set(ctx, (pending = new Map<string, number>()));
  const queued =
    rt.controller.queuedJobs(project.name) ?? (await countJobs(ctx.store.db, project.name, ['queued']));
  const reserved = pending.get(project.name) ?? 0;
  if (queued + reserved + count > limit) {
    const whose =
      project.maxQueued === null
        ? `cluster queue "${project.clusterQueue}"'s maxQueuedPerProject`
        : 'its maxQueued';
    throw new TooManyRequestsError(
      `project "${project.name}" has ${queued} job${queued === 1 ? '' : 's'} queued, ${whose} is ${limit}: ${count === 1 ? 'submit again once some are admitted' : `no room for ${count.toLocaleString('en')} more`}`,
      QUEUED_RETRY_AFTER_SECONDS,
    );
  }
  pending.set(project.name, reserved + count);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const n = (pending.get(project.name) ?? count) - count;
    if (n > 0) pending.set(project.name, n);
    else pending.delete(project.name);
  };
}
