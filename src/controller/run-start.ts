/**
 * A job's run starts: recorded `running`, and what its agent is to run. Served to an agent's
 * start call (agent-desk.ts), and given with the job to a pilot that takes it (pilots.ts), whose
 * start shares the hand-over's commit instead of waiting for a round trip and a commit of its own.
 */
import type { Member, StartResponse } from '../agent/protocol.js';
import { ConflictError } from '../domain/errors.js';
import { updateJob } from '../store/queries/jobs.js';
import type { ControllerCore } from './core.js';
import type { Holdings } from './holdings.js';
import type { TrackedJob } from './model.js';

/**
 * Records that the job runs: once, by whichever start comes first. Throws a ConflictError if its
 * run ended (evicted, cancelled, given another worker) while this was written: nothing of it is
 * then recorded.
 */
export async function markRunning(core: ControllerCore, job: TrackedJob): Promise<void> {
  const { o, journal, jobs } = core;
  if (job.starting) return job.starting;
  const now = o.now();
  // The run this start belongs to: it may end (evicted, requeued, perhaps given another worker)
  // while the start waits for its commit, and then nothing of it may be recorded.
  const workerId = job.workerId;
  const gone = () => job.workerId !== workerId;
  job.starting = journal.write(async ({ db, event }) => {
    if (gone()) return;
    await updateJob(db, job.id, {
      state: 'running',
      startedAt: now,
      reason: `running on worker ${job.workerId}`,
    });
    const on = job.workers > 1 ? ` (${job.workers} ranks)` : '';
    await event(job, 'started', `started on worker ${job.workerId}${on}`);
  });
  try {
    await job.starting;
  } finally {
    job.starting = null;
  }
  // Stopped while its start was written (before it ran, its run ends at once: requestStop).
  if (job.ending || gone()) throw new ConflictError(`job ${job.id} is being stopped: ${job.stopReason}`);
  if (job.state !== 'running') {
    jobs.setState(job, 'running');
    job.startedAt = now;
    o.metrics?.jobStarted(job.queue, (now - job.queuedAt) / 1000);
  }
}

/** What a member's agent runs: the job's command, environment, resources and limits. */
export function startSpec(
  core: ControllerCore,
  holdings: Holdings,
  job: TrackedJob,
  member: Member,
): StartResponse {
  const { o } = core;
  const gang = job.gang;
  return {
    jobId: job.id,
    project: job.project,
    command: job.command,
    env:
      job.arrayId === null
        ? job.env
        : { ...job.env, BERTH_ARRAY_ID: String(job.arrayId), BERTH_ARRAY_INDEX: String(job.arrayIndex) },
    resources: holdings.metadataOf(job),
    timeoutSeconds: job.timeoutSeconds,
    graceSeconds: o.graceSeconds,
    heartbeatSeconds: o.heartbeatSeconds,
    rank: member.rank,
    worldSize: job.workers,
    hosts: gang ? gang.hosts.map((h) => h ?? '') : [member.host],
    // Rank 0 alone keeps a job's artifacts (agent/artifacts.ts): the others are not told.
    ...(member.rank === 0 && job.artifacts.length > 0 ? { artifacts: job.artifacts } : {}),
    ...(job.interactive
      ? { interactive: o.interactive ?? { idleTimeoutSeconds: 3600, detachGraceSeconds: 600 } }
      : {}),
  };
}
