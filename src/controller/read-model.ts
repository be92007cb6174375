/**
 * The read side, from memory only: why an unfinished job waits and where, the queues' live
 * figures, and the pools' capacity, use and waiters.
 */
import type { QueueFigures } from '../scheduler/types.js';
import type { ControllerCore } from './core.js';
import { ProjectGates } from './project-gates.js';
import type { LiveQueueFigures, LiveStatus } from './port.js';
import type { QueueModels } from './queue-models.js';
import type { StartEstimates } from './start-estimates.js';
import { awaited, type Dependency } from '../domain/dependency.js';
import { retryingReason } from '../domain/retry.js';

export class ReadModel {
  constructor(
    private readonly core: ControllerCore,
    private readonly queues: QueueModels,
    private readonly estimates: StartEstimates,
  ) {}

  /** The live reason and position of an unfinished job; while the scheduler holds it, also its
   * place among its project's jobs and what blocks it. */
  explain(id: number, withEstimate = true): LiveStatus | undefined {
    const job = this.core.jobs.unfinished(id);
    if (!job) return undefined;
    if (job.state === 'queued') {
      if (job.retryAt !== null)
        return {
          reason: retryingReason(job.retryAfter, job.retryAt - this.core.o.now()),
          position: null,
          // Back in its queue at its backoff's end: its start is forecast from then.
          ...(withEstimate ? { estimate: this.estimates.estimate(id, 1) } : {}),
        };
      if (job.throttled)
        return {
          reason: `waiting for its turn: array ${job.arrayId} runs at most ${job.arrayThrottle} tasks at once (${this.core.throttles.inPlay(job.arrayId!)} in play)`,
          position: null,
        };
      if (job.waitingFor.length > 0) return { reason: waitingReason(job.waitingFor), position: null };
      if (job.parkedFor !== null) {
        const reason = ProjectGates.reason(job, job.parkedFor);
        return { reason, position: null, blockers: [ProjectGates.blocker(job, job.parkedFor)] };
      }
      const e = this.core.o.scheduler.explain(id);
      return (
        e && {
          reason: e.reason,
          position: e.position,
          projectPosition: e.projectPosition,
          blockers: e.blockers,
          ...(e.provisional ? { provisional: true } : {}),
          ...(withEstimate ? { estimate: this.estimates.estimate(id, e.position) } : {}),
        }
      );
    }
    if (job.stopping) return { reason: `stopping: ${job.stopReason}`, position: null };
    if (job.state === 'admitted' && job.workerWait !== null && job.workerId !== null) {
      const blocker = { kind: 'worker' as const, worker: job.workerId, reason: job.workerWait };
      return { reason: job.workerWait, position: null, blockers: [blocker] };
    }
    if (job.state === 'admitted' && job.waitingIn)
      return { reason: job.waitingIn.describeWait(id), position: null };
    if (job.state === 'admitted' && job.workerId === null && job.acquired < job.resources.length)
      return { reason: `acquiring resource ${job.resources[job.acquired]}`, position: null };
    return undefined;
  }

  queueFigures(name: string): LiveQueueFigures | undefined {
    const f = this.core.o.scheduler.queueFigures(name);
    return f && { ...f, running: this.core.jobs.running(name), admissions: this.core.jobs.admissions(name) };
  }

  *queueFiguresAll(): Iterable<QueueFigures & { name: string }> {
    for (const name of this.queues.names()) {
      const f = this.core.o.scheduler.queueFigures(name);
      if (f) yield { name, ...f };
    }
  }
}

/** "waiting for jobs 3, 4 to succeed and job 5 to end" */
function waitingReason(deps: Dependency[]): string {
  const parts = (['success', 'end', 'failure'] as const).flatMap((on) => {
    const ids = deps.filter((d) => d.on === on).map((d) => d.job);
    return ids.length === 0 ? [] : [`job${ids.length > 1 ? 's' : ''} ${ids.join(', ')} ${awaited(on)}`];
  });
  return `waiting for ${parts.join(' and ')}`;
}
