/**
 * A job's submission (or an array's): its spec built with its target's defaults (job-spec.ts),
 * checked against its project, the runtime and the store (runnable.ts), then written with its
 * `submitted` event and audit row on the group commit the submissions share, and admitted to the
 * queue's accounting (submission.ts). A repeated idempotency key gives back the job it made.
 */
import { ConflictError } from '../../domain/errors.js';
import type { Job } from '../../domain/job.js';
import type { Principal } from '../../domain/user.js';
import { appendEvent } from '../../store/queries/events.js';
import { type NewJob, findJobByKey } from '../../store/queries/jobs.js';
import { SubmissionWriter } from './submission-writer.js';
import { taskCount, writeArray } from './array-submission.js';
import { accept } from './submission.js';
import { actorName, requireProject } from '../tenancy/access.js';
import { auditActor } from '../tenancy/audit.js';
import { type ServiceContext, type With } from '../context.js';
import { jobView } from './job-views.js';
import { resolvePriority } from './priority-classes.js';
import { write } from './jobs.js';
import {
  buildSpec,
  defaultName,
  submissionDetail,
  withTargetDefaults,
  type SubmitInput,
} from './job-spec.js';
import { checkDependencies, checkRunnable } from './runnable.js';

export async function submitJob(
  ctx: With<'runtime'>,
  p: Principal,
  projectName: string,
  input: SubmitInput,
): Promise<{ job: Job; created: boolean }> {
  const createdBy = actorName(p);
  const rt = ctx.runtime;
  const target = input.target ?? rt.defaultTarget;
  const { spec, note } = withTargetDefaults(buildSpec(input), target, rt.targets[target]);
  // The checks read before the write, on a connection of their own: the write transaction, which
  // one server runs one at a time (store/group-commit.ts), holds only the two inserts. (Inside it
  // they would be no safer: read committed takes no lock on what it reads.)
  const db = ctx.store.db;
  const { project } = await requireProject(db, p, projectName, 'member', 'submitting jobs', ctx.projectCache);
  if (input.idempotencyKey) {
    const existing = await findJobByKey(db, project.name, input.idempotencyKey);
    if (existing) return { job: await jobView(ctx, p, existing, false), created: false };
  }
  if (!project.active)
    throw new ConflictError(`project "${project.name}" is inactive: it accepts no new jobs`);
  const queue = await checkRunnable(db, rt, project.name, project.clusterQueue, target, spec);
  await checkDependencies(db, project.name, spec);
  const priority = await resolvePriority(db, input.priority);
  const job: NewJob = {
    project: project.name,
    name: input.name ?? defaultName(spec.command, spec.image),
    clusterQueue: project.clusterQueue,
    target,
    priority: priority.value,
    spec: priority.priorityClass === null ? spec : { ...spec, priorityClass: priority.priorityClass },
    idempotencyKey: input.idempotencyKey ?? null,
    createdBy,
    reason: `waiting in cluster queue ${project.clusterQueue}`,
  };
  // Env names only: their values may be secrets.
  const auditEntry = {
    ...auditActor(p),
    action: 'job.submit' as const,
    project: project.name,
    detail: submissionDetail(job.name, target, spec),
  };
  const rows =
    spec.array !== undefined
      ? {
          count: taskCount(job),
          write: () => writeArray(ctx, { job, audit: auditEntry, note, write: (fn) => write(ctx, fn) }),
        }
      : {
          count: 1,
          write: async () => {
            const record = await submissionsOf(ctx).submit({
              job,
              inserted: async (db, record, announce) => {
                const message = `submitted by ${createdBy} to cluster queue ${project.clusterQueue}${note}`;
                const event = { subjectKind: 'job', subject: String(record.id), project: project.name };
                await appendEvent(
                  db,
                  { ...event, jobId: record.id, type: 'submitted', message },
                  record.createdAt,
                );
                announce({ kind: 'submitted', record });
              },
              // Written with the batch's jobs, in bulk.
              audit: auditEntry,
            });
            return record && [record];
          },
        };
  return accept(ctx, {
    project,
    queue,
    submitter: p,
    idempotencyKey: job.idempotencyKey,
    what: spec.array !== undefined ? 'array' : 'job',
    ...rows,
  });
}

/** The submissions of one server share a writer (submission-writer.ts). */
const writers = new WeakMap<ServiceContext, SubmissionWriter>();
function submissionsOf(ctx: ServiceContext): SubmissionWriter {
  let w = writers.get(ctx);
  if (!w) writers.set(ctx, (w = new SubmissionWriter((fn) => write(ctx, fn), ctx.now)));
  return w;
}
