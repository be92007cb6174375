/**
 * The server's side of the agent protocol (agent/protocol.ts): a worker's agent starts its job,
 * uploads output, heartbeats (a long poll that answers early when the job must stop) and reports
 * how the job ended. Only a job that has a worker and has not finished is served.
 */
import {
  ONLY_MEMBER,
  type FinishRequest,
  type HeartbeatResponse,
  type Member,
  type StartResponse,
} from '../agent/protocol.js';
import { BadRequestError, ConflictError, UnauthorizedError, UnavailableError } from '../domain/errors.js';
import type { ControllerCore } from './core.js';
import type { Holdings } from './holdings.js';
import type { Lifecycle } from './lifecycle.js';
import { LongPollSlots } from './long-poll-slots.js';
import { LogBudget } from './log-budget.js';
import type { Pilots } from './pilots.js';
import type { PilotNext } from './port.js';
import type { AgentProtocol } from './port.js';
import { markRunning, startSpec } from './run-start.js';
import type { TrackedJob } from './model.js';

export class AgentDesk implements AgentProtocol {
  /** Set when the server stops: long polls end at once. */
  private closed = false;
  /**
   * Set once the model is rebuilt on start. The server listens before that, and an agent that
   * outlived the previous server may ask meanwhile: it is told to ask again (503, which agents
   * retry), not that its job is unknown — which would end its job.
   */
  private restored = false;
  /** The long polls each job's ranks hold open, bounded: job code holds the token too. */
  private readonly polls = new LongPollSlots();
  /** Each run's output within `logs.maxBytesPerJob`. */
  private readonly logBudget: LogBudget;

  constructor(
    private readonly core: ControllerCore,
    private readonly holdings: Holdings,
    private readonly lifecycle: Lifecycle,
    private readonly pilots: Pilots,
  ) {
    const { logs, store, maxLogBytesPerRun } = core.o;
    this.logBudget = new LogBudget(logs, store.db, maxLogBytesPerRun ?? Infinity);
  }

  /** The model is rebuilt: agents are served from now on. */
  open(): void {
    this.restored = true;
  }

  /** Refuses, for now, an agent's request that comes before the model is rebuilt. */
  private whenRestored(): void {
    if (!this.restored)
      throw new UnavailableError('the server is restoring its jobs after a restart: ask again', 1);
  }

  close(): void {
    this.closed = true;
    this.core.signals.notifyAll();
    this.pilots.close();
  }

  private jobForAgent(jobId: number): TrackedJob {
    this.whenRestored();
    const job = this.core.jobs.unfinished(jobId);
    if (!job || job.workerId === null) throw new UnauthorizedError('this job is not running');
    return job;
  }

  /**
   * A member's agent starts its part of the job; null while a gang's other ranks have not arrived
   * (it asks again). The job runs from the moment its last member arrives.
   */
  async agentStart(jobId: number, member: Member = ONLY_MEMBER, waitMs = 0): Promise<StartResponse | null> {
    const { o, signals } = this.core;
    let job = this.jobForAgent(jobId);
    const gang = job.gang;
    checkRank(job, member.rank);
    if (gang && !gang.arrive(member.rank, member.host, o.now())) {
      // The rendezvous: wait for the others (the last to arrive wakes this wait).
      if (waitMs > 0 && !this.closed) await this.longPoll(jobId, member.rank, waitMs);
      job = this.jobForAgent(jobId);
      if (!gang.complete) {
        if (job.stopping) throw new ConflictError(`job ${jobId} is being stopped: ${job.stopReason}`);
        return null;
      }
    } else if (gang) {
      signals.notify(jobId); // the last member: the others' waits end
    }
    if (job.stopping) throw new ConflictError(`job ${jobId} is being stopped: ${job.stopReason}`);
    if (job.state !== 'running') await markRunning(this.core, job);
    this.heard(job, member.rank);
    return startSpec(this.core, this.holdings, job, member);
  }

  /** What a one-worker job's agent will be given at its start, without starting it. */
  agentSpec(jobId: number): StartResponse {
    return startSpec(this.core, this.holdings, this.jobForAgent(jobId), ONLY_MEMBER);
  }

  /** A member was heard from: the job's heartbeat deadline runs from its longest-silent member. */
  private heard(job: TrackedJob, rank: number): void {
    const now = this.core.o.now();
    if (!job.gang) job.lastHeartbeat = now;
    else {
      job.gang.beat(rank, now);
      job.lastHeartbeat = job.gang.oldestHeard(now);
    }
  }

  async agentLogs(jobId: number, data: Buffer): Promise<void> {
    await this.logBudget.append(this.jobForAgent(jobId), data);
  }

  /** Long poll: counts as a heartbeat; returns at once when the job must stop. */
  async agentHeartbeat(jobId: number, waitMs: number, rank = 0): Promise<HeartbeatResponse> {
    const job = this.jobForAgent(jobId);
    checkRank(job, rank);
    this.heard(job, rank);
    if (!job.stopping && waitMs > 0 && !this.closed) {
      await this.longPoll(jobId, rank, waitMs);
      this.heard(job, rank);
    }
    return job.stopping ? { cancel: true, reason: job.stopReason } : { cancel: false };
  }

  /**
   * Waits up to `waitMs` for the job's stop signal, in one of the rank's few long-poll slots
   * (long-poll-slots.ts): a newer poll of the rank past the bound ends this one early.
   */
  private async longPoll(jobId: number, rank: number, waitMs: number): Promise<void> {
    const slot = this.polls.enter(jobId, rank);
    try {
      await this.core.signals.wait(jobId, waitMs, slot.signal);
    } finally {
      slot.leave();
    }
  }

  /** Resolves with the worker's id if it stays, a pilot, for its next job; else null. */
  async agentFinish(jobId: number, reported: FinishRequest, rank = 0): Promise<number | null> {
    const job = this.jobForAgent(jobId);
    // Its message becomes the job's reason and an event, which the store cannot hold with a NUL
    // (PostgreSQL's text refuses one). The API refuses one already; a factory reporting for its
    // worker (a Slurm job's own files) may not have.
    const result = { ...reported, message: reported.message?.replaceAll('\u0000', '\uFFFD') };
    checkRank(job, rank);
    // The worker's failure, not the job's, only for a job that never ran: its code, which holds
    // the job's token too, cannot move its own failures to the infrastructure's budget.
    const charge = result.infrastructure && job.state !== 'running' ? 'infrastructure' : 'job';
    if (!job.gang) {
      // Its agent is well and asks for the next job: a pilot stays for it.
      const workerId = job.workerId;
      const kept = this.pilots.keep(job);
      await this.lifecycle.endRun(job, result, charge);
      return kept ? workerId : null;
    }
    const report = job.gang.report(rank, result);
    job.lastHeartbeat = job.gang.oldestHeard(this.core.o.now());
    if (report.kind === 'done') await this.lifecycle.endRun(job, report.result, charge);
    else if (report.kind === 'stop-others')
      await this.lifecycle.requestStop(job, 'rank-failed', report.reason);
    return null;
  }

  /** What keeps the job from starting on its worker, said by its agent (ignored once it runs). */
  agentWaiting(jobId: number, reason: string | null): void {
    const job = this.jobForAgent(jobId);
    if (job.state !== 'running') job.workerWait = reason;
  }

  /** An artifact's upload: the run it belongs to. Rank 0 uploads a gang's (agent/artifacts.ts). */
  artifactAttempt(jobId: number): number {
    const job = this.jobForAgent(jobId);
    if (job.state !== 'running') throw new UnauthorizedError('this job is not running');
    this.heard(job, 0);
    return job.attempts + 1;
  }

  /** A pilot's agent asks for its next job (long poll). */
  pilotNext(workerId: number, waitMs: number): Promise<PilotNext> {
    this.whenRestored();
    return this.pilots.next(workerId, waitMs);
  }
}

/** A rank the job has: 0 for a one-worker job, 0 to workers − 1 for a gang. */
function checkRank(job: TrackedJob, rank: number): void {
  if (!Number.isSafeInteger(rank) || rank < 0 || rank >= job.workers)
    throw new BadRequestError(
      `rank ${rank}: job ${job.id} has ${job.workers === 1 ? 'one worker (rank 0)' : `ranks 0 to ${job.workers - 1}`}`,
    );
}
