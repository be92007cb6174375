/**
 * The server's side of the agent protocol (agent/protocol.ts): a worker's agent starts its job,
 * uploads output, heartbeats (a long poll that answers early when the job must stop) and reports
 * how the job ended. Only a job that has a worker and has not finished is served.
 */
import type { FinishRequest, HeartbeatResponse, StartResponse } from '../agent/protocol.js';
import { ConflictError, UnauthorizedError } from '../domain/errors.js';
import { updateJob } from '../store/queries/jobs.js';
import type { ControllerCore } from './core.js';
import type { Holdings } from './holdings.js';
import type { Lifecycle } from './lifecycle.js';
import type { PilotNext, Pilots } from './pilots.js';
import type { AgentProtocol } from './port.js';
import type { TrackedJob } from './tracked-jobs.js';

export class AgentDesk implements AgentProtocol {
  /** Set when the server stops: long polls end at once. */
  private closed = false;

  constructor(
    private readonly core: ControllerCore,
    private readonly holdings: Holdings,
    private readonly lifecycle: Lifecycle,
    private readonly pilots: Pilots,
  ) {}

  close(): void {
    this.closed = true;
    this.core.signals.notifyAll();
    this.pilots.close();
  }

  private jobForAgent(jobId: number): TrackedJob {
    const job = this.core.jobs.unfinished(jobId);
    if (!job || job.workerId === null) throw new UnauthorizedError('this job is not running');
    return job;
  }

  async agentStart(jobId: number): Promise<StartResponse> {
    const { o, journal, jobs } = this.core;
    const job = this.jobForAgent(jobId);
    if (job.stopping) throw new ConflictError(`job ${jobId} is being stopped: ${job.stopReason}`);
    if (job.state !== 'running') {
      const now = o.now();
      await journal.write(async ({ db, event }) => {
        await updateJob(db, jobId, {
          state: 'running',
          startedAt: now,
          reason: `running on worker ${job.workerId}`,
        });
        await event(job, 'started', `started on worker ${job.workerId}`);
      });
      // Stopped while its start was written (before it ran, its run ends at once: requestStop).
      if (job.ending) throw new ConflictError(`job ${jobId} is being stopped: ${job.stopReason}`);
      jobs.setState(job, 'running');
      job.startedAt = now;
    }
    job.lastHeartbeat = o.now();
    return {
      jobId,
      project: job.project,
      command: job.command,
      env: job.env,
      resources: this.holdings.metadataOf(job),
      timeoutSeconds: job.timeoutSeconds,
      graceSeconds: o.graceSeconds,
      heartbeatSeconds: o.heartbeatSeconds,
    };
  }

  async agentLogs(jobId: number, text: string): Promise<void> {
    this.jobForAgent(jobId);
    await this.core.o.logs.append(jobId, text);
  }

  /** Long poll: counts as a heartbeat; returns at once when the job must stop. */
  async agentHeartbeat(jobId: number, waitMs: number): Promise<HeartbeatResponse> {
    const job = this.jobForAgent(jobId);
    job.lastHeartbeat = this.core.o.now();
    if (!job.stopping && waitMs > 0 && !this.closed) {
      await this.core.signals.wait(jobId, waitMs);
      job.lastHeartbeat = this.core.o.now();
    }
    return job.stopping ? { cancel: true, reason: job.stopReason } : { cancel: false };
  }

  async agentFinish(jobId: number, result: FinishRequest): Promise<void> {
    const job = this.jobForAgent(jobId);
    // Its agent is well and asks for the next job: a pilot stays for it.
    this.pilots.keep(job);
    await this.lifecycle.endRun(job, result);
  }

  /** A pilot's agent asks for its next job (long poll). */
  pilotNext(workerId: number, waitMs: number): Promise<PilotNext> {
    return this.pilots.next(workerId, waitMs);
  }
}
