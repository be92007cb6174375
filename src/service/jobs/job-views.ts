/**
 * Jobs as the API shows them: the stored record, its worker and resource instances (a few queries
 * for a whole page), and the controller's live reason, position and blockers laid over it.
 */
import { instantsIn } from '../../domain/reason-times.js';
import { isTerminal, type Job, type JobRecord } from '../../domain/job.js';
import { retryPolicy } from '../../domain/retry.js';
import type { WorkerRecord } from '../../domain/worker.js';
import { instancesOfJobs } from '../../store/queries/resource-instances.js';
import { iso, isoOrNull } from '../../store/queries/time.js';
import { latestWorkers, workersOfLastAllocations } from '../../store/queries/workers.js';
import type { Principal } from '../../domain/user.js';
import type { ServiceContext } from '../context.js';
import { envFor } from '../tenancy/env-visibility.js';
import { imageParts } from '../../images/reference.js';

/** A job's retry budgets and their use; `retryAt` only while it waits out a retry's backoff. */
function retryView(
  r: JobRecord,
): Pick<Job, 'retries' | 'infraRetries' | 'retryBackoffSeconds' | 'retried' | 'infraRetried' | 'retryAt'> {
  const p = retryPolicy(r.spec);
  return {
    retries: p.retries,
    infraRetries: p.infraRetries,
    retryBackoffSeconds: p.backoffSeconds,
    retried: r.retried,
    infraRetried: r.infraRetried,
    // Kept in the store after its backoff ends, until its next attempt ends: shown only until then.
    retryAt: r.state === 'queued' && (r.retryAt ?? 0) > Date.now() ? isoOrNull(r.retryAt) : null,
  };
}

type Live = Pick<
  Job,
  'position' | 'projectPosition' | 'blockers' | 'estimatedStartAt' | 'estimate' | 'resources' | 'worker'
>;

/** The job `r` as `viewer` sees it (its env values only if service/tenancy/env-visibility.ts allows). */
export function toJobView(r: JobRecord, live: Live, viewer: Principal): Job {
  return {
    id: r.id,
    project: r.project,
    name: r.name,
    state: r.state,
    reason: r.reason,
    reasonTimes: instantsIn(r.reason),
    provisional: false,
    position: live.position,
    projectPosition: live.projectPosition,
    blockers: live.blockers,
    estimatedStartAt: live.estimatedStartAt,
    estimate: live.estimate,
    exitCode: r.exitCode,
    clusterQueue: r.clusterQueue,
    target: r.target,
    priority: r.priority,
    priorityClass: r.spec.priorityClass ?? null,
    requests: r.spec.requests,
    workers: r.spec.workers ?? 1,
    borrowed: r.borrowed,
    resources: live.resources,
    worker: live.worker,
    command: r.spec.command,
    ...imageView(r.spec.image),
    interactive: r.spec.interactive === true,
    env: envFor(viewer, r),
    timeoutSeconds: r.spec.timeoutSeconds,
    dependsOn: r.spec.dependsOn,
    dependsOnAny: r.spec.dependsOnAny ?? [],
    dependsOnFailed: r.spec.dependsOnFailed ?? [],
    artifacts: r.spec.artifacts ?? [],
    createdBy: r.createdBy,
    attempts: r.attempts,
    ...retryView(r),
    arrayId: r.arrayId,
    arrayIndex: r.arrayIndex,
    cancelRequested: r.cancelRequested,
    createdAt: iso(r.createdAt),
    admittedAt: isoOrNull(r.admittedAt),
    startedAt: isoOrNull(r.startedAt),
    finishedAt: isoOrNull(r.finishedAt),
    cleanedUp: r.cleanedUp,
  };
}

/**
 * The views of `records` as `viewer` sees them, in their order. `fresh`: just submitted, so no
 * worker or instance yet.
 */
export async function jobViews(
  ctx: ServiceContext,
  viewer: Principal,
  records: JobRecord[],
  fresh = false,
): Promise<Job[]> {
  const ids = records.map((r) => r.id);
  const workers = fresh ? new Map<number, WorkerRecord>() : await latestWorkers(ctx.store.db, ids);
  // An ended job's worker is the one its last allocation ran on: a pilot's row names only the
  // pilot's latest job.
  const ended = fresh ? [] : records.filter((r) => isTerminal(r.state)).map((r) => r.id);
  for (const [job, worker] of await workersOfLastAllocations(ctx.store.db, ended)) workers.set(job, worker);
  const instances = fresh ? new Map<number, never>() : await instancesOfJobs(ctx.store.db, ids);
  return records.map((r) => {
    // A job just submitted shows no estimate: making one per submission would cost a forecast each.
    const live = isTerminal(r.state) ? undefined : ctx.runtime?.controller.explain(r.id, !fresh);
    const worker = workers.get(r.id);
    const job = toJobView(
      r,
      {
        position: live?.position ?? null,
        projectPosition: live?.projectPosition ?? null,
        blockers: live?.blockers ?? [],
        estimatedStartAt: isoOrNull(live?.estimate?.startAt ?? null),
        estimate: live?.estimate?.how ?? null,
        resources: (instances.get(r.id) ?? []).map((i) => ({ type: i.type, id: i.id, state: i.state })),
        worker: worker
          ? {
              id: worker.id,
              state: worker.state,
              ...(Array.isArray(worker.handle?.devices) ? { devices: worker.handle.devices } : {}),
            }
          : null,
      },
      viewer,
    );
    if (live) {
      job.reason = live.reason;
      job.reasonTimes = instantsIn(live.reason);
      job.provisional = live.provisional === true;
    }
    return job;
  });
}

export async function jobView(
  ctx: ServiceContext,
  viewer: Principal,
  record: JobRecord,
  fresh = false,
): Promise<Job> {
  return (await jobViews(ctx, viewer, [record], fresh))[0]!;
}

/** The job's image and the digest it is pinned to, apart (null, null: none). */
function imageView(image: string | undefined): Pick<Job, 'image' | 'imageDigest'> {
  if (image === undefined) return { image: null, imageDigest: null };
  const { image: name, digest } = imageParts(image);
  return { image: name, imageDigest: digest };
}
