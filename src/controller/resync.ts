/**
 * The periodic resync: what no event reports. A worker silent past the heartbeat deadline is
 * lost; one that does not stop within the grace period after being told is lost; a run past its
 * timeout (when its agent did not enforce it) is stopped; failed destroys are tried again.
 */
import type { ControllerCore } from './core.js';
import type { Holdings } from './holdings.js';
import type { Lifecycle } from './lifecycle.js';
import type { Pilots } from './pilots.js';

export function resync(core: ControllerCore, lifecycle: Lifecycle, holdings: Holdings, pilots: Pilots): void {
  const { o, jobs } = core;
  const now = o.now();
  const graceMs = o.graceSeconds * 1000;
  const heartbeatMs = o.heartbeatSeconds * 1000;
  for (const job of jobs.withWorker) {
    if (jobs.isFinished(job.id) || job.workerId === null) continue;
    if (job.stopping && now - job.stopRequestedAt > graceMs + heartbeatMs) {
      lifecycle.workerLost(job.workerId, `did not stop within ${o.graceSeconds + o.heartbeatSeconds}s`);
    } else if (job.state === 'running' && now - job.lastHeartbeat > heartbeatMs) {
      lifecycle.workerLost(job.workerId, `no heartbeat for ${Math.round((now - job.lastHeartbeat) / 1000)}s`);
    } else if (
      job.state === 'running' &&
      job.timeoutSeconds !== null &&
      job.startedAt !== null &&
      now - job.startedAt > job.timeoutSeconds * 1000 + graceMs + heartbeatMs
    ) {
      void lifecycle
        .requestStop(job, 'timeout', `timed out after ${job.timeoutSeconds}s`)
        .catch((e: unknown) => core.report(e, `job ${job.id}`));
    }
  }
  for (const workerId of pilots.expire(now))
    lifecycle.workerLost(workerId, `its agent did not ask for its next job within ${o.heartbeatSeconds}s`);
  holdings.retryDue(now);
  core.wake();
}
