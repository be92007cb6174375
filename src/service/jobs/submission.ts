/**
 * The one path a submission takes once it is checked (jobs.ts): its place under the project's
 * `maxQueued` held, its rows written with their `submitted` event and audit row in one unit that
 * announces them (service/live/notices.ts: the controller, the live streams, the leader), and the answer
 * made. A single job and a job array differ only in how their rows are written: a job goes
 * with the other jobs submitted meanwhile (submission-writer.ts), an array's tasks in bulk
 * (array-submission.ts). A repeated idempotency key answers with the job that has it.
 */
import { ConflictError } from '../../domain/errors.js';
import type { Job, JobRecord } from '../../domain/job.js';
import type { Project } from '../../domain/project.js';
import type { Principal } from '../../domain/user.js';
import type { QueueModel } from '../../controller/port.js';
import { findJobByKey } from '../../store/queries/jobs.js';
import type { With } from '../context.js';
import { jobView } from './job-views.js';
import { reserveQueued } from './queued-limit.js';

export interface Accepted {
  project: Project;
  queue: QueueModel;
  submitter: Principal;
  idempotencyKey: string | null;
  /** `job` or `array`: what the answer names when its key's job is gone. */
  what: string;
  /** How many jobs it queues: its places under `maxQueued`. */
  count: number;
  /**
   * Writes its rows, in one unit with their event, audit row and control message: the records,
   * the first the one the answer shows; undefined when the project already has a job with its key.
   */
  write: () => Promise<JobRecord[] | undefined>;
}

export async function accept(ctx: With<'runtime'>, s: Accepted): Promise<{ job: Job; created: boolean }> {
  const rt = ctx.runtime;
  // Its places under the project's maxQueued, held until the jobs count among the queued themselves.
  const release = await reserveQueued(ctx, rt, s.project, s.queue, s.count);
  let records: JobRecord[] | undefined;
  try {
    // Committed and announced (service/live/notices.ts): the controller tracks the jobs before their places go.
    records = await s.write();
  } finally {
    release();
  }
  if (!records) {
    // Two submissions with one idempotency key at the same time: one gets in; the other answers
    // with it, as if it had come second.
    const existing = await findJobByKey(ctx.store.db, s.project.name, s.idempotencyKey!);
    if (!existing)
      throw new ConflictError(
        `the ${s.what} with idempotency key "${s.idempotencyKey}" is gone (its project was deleted)`,
      );
    return { job: await jobView(ctx, s.submitter, existing), created: false };
  }
  return { job: await jobView(ctx, s.submitter, records[0]!, true), created: true };
}
