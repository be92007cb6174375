/** Reading and cancelling job arrays: `GET /arrays/{id}`, a task by index, cancel every task. */
import { NotFoundError } from '../../domain/errors.js';
import type { ArraySummary } from '../../domain/job-array.js';
import type { Job, JobRecord } from '../../domain/job.js';
import type { Principal } from '../../domain/user.js';
import {
  countArrayTasks,
  findArrayTaskId,
  requestArrayCancel,
  unfinishedArrayTaskIds,
} from '../../store/queries/job-arrays.js';
import { summaryOf } from './array-summaries.js';
import type { ServiceContext } from '../context.js';
import { jobView } from './job-views.js';
import { visibleJob, write } from './jobs.js';
import { actorName } from '../tenancy/access.js';
import { audit } from '../tenancy/audit.js';
import type { ControllerCommands, ControllerReadModel } from '../../controller/port.js';
import { appendEvent } from '../../store/queries/events.js';

/** The array `id` names (its first task's id), if the caller may see it; 404 otherwise. */
async function visibleArray(
  ctx: ServiceContext,
  p: Principal,
  id: number,
  needed: 'viewer' | 'member' = 'viewer',
): Promise<JobRecord> {
  const head = await visibleJob(ctx, p, id, needed).catch((e: unknown) => {
    throw e instanceof NotFoundError ? new NotFoundError(`array ${id} not found`) : e;
  });
  if (head.arrayId !== head.id)
    throw new NotFoundError(`array ${id} not found: job ${id} is not an array's first task`);
  return head;
}

export async function getArray(
  ctx: ServiceContext,
  p: Principal,
  id: number,
): Promise<ArraySummary & { job: Job }> {
  const head = await visibleArray(ctx, p, id);
  const counts = (await countArrayTasks(ctx.store.db, [id])).get(id)!;
  return { ...summaryOf(head, counts), job: await jobView(ctx, p, head) };
}

/** Task `index` of array `id`, as a job. */
export async function arrayTask(ctx: ServiceContext, p: Principal, id: number, index: number): Promise<Job> {
  await visibleArray(ctx, p, id);
  const taskId = await findArrayTaskId(ctx.store.db, id, index);
  if (taskId === undefined) throw new NotFoundError(`array ${id} has no task ${index}`);
  return jobView(ctx, p, await visibleJob(ctx, p, taskId));
}

/**
 * Cancels every unfinished task of the array: the request recorded once for all of them (one
 * event, one audit row, one message to the leader), then each task stopped by the controller.
 */
export async function cancelArray(
  ctx: ServiceContext,
  p: Principal,
  id: number,
): Promise<ArraySummary & { job: Job }> {
  const head = await visibleArray(ctx, p, id, 'member');
  const by = actorName(p);
  await write(ctx, async (db, announce) => {
    const now = ctx.now();
    await requestArrayCancel(db, id);
    const event = { subjectKind: 'job', subject: String(id), project: head.project, jobId: id };
    await appendEvent(
      db,
      { ...event, type: 'cancel-requested', message: `array ${id} cancelled by ${by}` },
      now,
    );
    await audit(
      db,
      p,
      { action: 'job.cancel', subject: String(id), project: head.project, detail: { array: true } },
      now,
    );
    announce({ kind: 'array-cancel', id, by, taskIds: await unfinishedArrayTaskIds(db, id) });
  });
  return getArray(ctx, p, id);
}

type Canceller = ControllerCommands & Pick<ControllerReadModel, 'isActive'>;

/**
 * Has the controller stop each task, the last first: those waiting for their turn under the
 * array's throttle go before those in play, whose end would let a waiting one go.
 */
export function cancelTasks(controller: Canceller, ids: number[], by: string): Promise<void> {
  return cancelEach(controller, [...ids].reverse(), by);
}

/** Has the controller stop each job still active, in the order given; one ended meanwhile is passed over. */
export async function cancelEach(controller: Canceller, ids: number[], by: string): Promise<void> {
  for (const id of ids) {
    if (!controller.isActive(id)) continue;
    await controller.cancel(id, by).catch(() => {
      // It ended meanwhile: nothing to cancel.
    });
  }
}
