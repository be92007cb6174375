/**
 * A job's transitions after submission: into the scheduler (once its dependencies have
 * succeeded), cancel, eviction and requeue, the end of a run, a retry after a failure (while its
 * budget lasts: domain/retry.ts), and the terminal state with its cleanup. Each transition is
 * recorded with its event in one unit before the model moves on.
 */
import { dependencyMet, unmetReason, type Dependency } from '../domain/dependency.js';
import { ConflictError } from '../domain/errors.js';
import { isTerminal, type JobState } from '../domain/job.js';
import {
  decide,
  type Decision,
  type JobFacts,
  type RunReport,
  type StopKind,
} from '../domain/job-transitions.js';
import {
  describeRetry,
  retryingReason,
  retryDelayMs,
  type AttemptCharge,
  type FailureKind,
} from '../domain/retry.js';
import type { Allocation, AllocationOutcome } from '../domain/usage.js';
import { insertAttempt } from '../store/queries/attempts.js';
import { findJobState, updateJob, type JobUpdate } from '../store/queries/jobs.js';
import { deleteJobTokens } from '../store/queries/tokens.js';
import { recordAllocation } from '../store/queries/usage.js';
import type { ControllerCore } from './core.js';
import type { Holdings } from './holdings.js';
import type { ProjectGates } from './project-gates.js';
import type { Provisioning, ProvisioningOutcomes } from './provisioning.js';
import { runtimeSubject, workloadOf } from './tracked-jobs.js';
import type { TrackedJob } from './model.js';

export class Lifecycle implements ProvisioningOutcomes {
  constructor(
    private readonly core: ControllerCore,
    private readonly holdings: Holdings,
    private readonly provisioning: Provisioning,
    private readonly gates: ProjectGates,
  ) {}

  /**
   * Hands the job to the scheduler, or parks it until its dependencies succeed or its project
   * holds the privileges it needs again.
   */
  async enqueueWhenReady(job: TrackedJob): Promise<void> {
    const { jobs, o } = this.core;
    // Waiting out its backoff before a retry: it comes back when the timer goes off.
    if (job.retryAt !== null && job.retryAt > o.now()) return this.retryLater(job, job.retryAt);
    job.retryAt = null;
    const waiting: Dependency[] = [];
    for (const dep of job.dependencies) {
      const state = jobs.unfinished(dep.job)?.state ?? (await findJobState(o.store.db, dep.job));
      if (state !== undefined && !isTerminal(state)) {
        waiting.push(dep);
        continue;
      }
      if (state === undefined || !dependencyMet(dep.on, state)) {
        await this.finish(job, 'cancelled', unmetReason(dep, state), null);
        return;
      }
    }
    job.waitingFor = waiting;
    if (waiting.length > 0) {
      for (const dep of waiting) jobs.addDependent(dep.job, job.id);
      return;
    }
    // A task of a throttled array waits here for its turn (a finished task lets it go: end()).
    if (!this.core.throttles.admit(job)) return;
    return this.toScheduler(job);
  }

  /** The job goes on to the scheduler, or is parked while its project lacks a privilege it needs. */
  private toScheduler(job: TrackedJob): Promise<void> | void {
    const lacking = this.gates.missing(job);
    if (lacking) return this.gates.park(job, lacking);
    this.core.jobs.inScheduler++;
    this.core.o.scheduler.enqueue(workloadOf(job, this.core.runtimes));
    this.core.arrivals.add(this.core.o.now(), job);
  }

  /**
   * Cancels a job in whatever state it is; 409 if it has already finished. The request itself
   * (`cancelRequested` and its event) is recorded by the service, on whichever replica took it.
   */
  async cancel(id: number, by: string): Promise<void> {
    const job = this.core.jobs.unfinished(id);
    if (!job) throw new ConflictError(`job ${id} has already finished`);
    const d = decide(this.factsOf(job), { type: 'cancel', by });
    if (d.do === 'await-ending') return job.ending!;
    job.cancelRequested = true;
    await this.carryOut(job, d);
    this.core.wake();
  }

  /** Evicts an admitted job so it returns to its queue. */
  evict(job: TrackedJob, kind: 'preempt' | 'drain', reason: string): Promise<void> {
    this.core.o.metrics?.jobEvicted(job.queue, kind);
    return this.carryOut(job, decide(this.factsOf(job), { type: 'evict', kind, reason }));
  }

  /**
   * Tells the job's agent to stop (at once, through its heartbeat long poll). Resolves once that
   * is asked — or, for a job its agent has not started, once its run has ended.
   */
  requestStop(job: TrackedJob, kind: StopKind, reason: string): Promise<void> {
    return this.carryOut(job, decide(this.factsOf(job), { type: 'stop', kind, reason }));
  }

  /** The worker died without its agent reporting how the job ended. */
  workerLost(workerId: number, message: string): void {
    const w = this.holdings.get('worker', workerId);
    const job = w && this.core.jobs.unfinished(w.jobId);
    if (!job || job.workerId !== workerId) return;
    // A gang whose rank failed ended with that failure, however its other ranks went.
    const failure = job.gang?.failure();
    const run = failure
      ? this.endRun(job, failure)
      : this.endRun(
          job,
          { outcome: 'start-failed', exitCode: null, signal: null, message: `worker lost: ${message}` },
          'infrastructure',
        );
    this.core.background.run(run, `job ${job.id}`);
  }

  /**
   * A run ended (agent report, lost worker, failed start): decide what becomes of the job.
   * `charge`: whose fault a failure is — the job's own, or the infrastructure's (its worker was
   * lost or could not be made) — which says which retry budget it draws on.
   */
  endRun(job: TrackedJob, report: RunReport, charge: FailureKind = 'job'): Promise<void> {
    return this.carryOut(job, decide(this.factsOf(job), { type: 'run-ended', report, charge }));
  }

  /** The job failed (its quota released): retried while the budget `charge` draws on lasts, else it ends failed. */
  fail(
    job: TrackedJob,
    reason: string,
    exitCode: number | null,
    charge: FailureKind,
    final = false,
  ): Promise<void> {
    return this.carryOut(
      job,
      decide(this.factsOf(job), { type: 'failed', reason, exitCode, charge, ...(final ? { final } : {}) }),
    );
  }

  /**
   * An admitted job cannot get what it needs (a resource its well keeps failing to make): its
   * quota is released, and it is retried or fails, charged to the infrastructure — or, `final`,
   * it fails at once, its own mistake that no retry could change (an image that does not exist).
   */
  async failAdmitted(job: TrackedJob, reason: string, final = false): Promise<void> {
    this.core.o.scheduler.release(job.id);
    await this.fail(job, reason, null, final ? 'job' : 'infrastructure', final);
  }

  /** The slice of the model a transition reads (domain/job-transitions.ts). */
  private factsOf(job: TrackedJob): JobFacts {
    return {
      state: job.state,
      hasWorker: job.workerId !== null,
      started: job.startedAt !== null,
      stopping: job.stopping,
      stopReason: job.stopReason,
      cancelRequested: job.cancelRequested,
      ending: job.ending !== null || this.core.jobs.isFinished(job.id),
      attempts: job.attempts,
      timeoutSeconds: job.timeoutSeconds,
      retryPolicy: job.retryPolicy,
      retriesUsed: job.retriesUsed,
    };
  }

  /** Carries a transition's decision out: the model, the scheduler, timers, the store. */
  private async carryOut(job: TrackedJob, d: Decision): Promise<void> {
    const { o, signals } = this.core;
    switch (d.do) {
      case 'ignore':
      case 'await-ending':
        return;
      case 'stop':
        job.stopping = d.kind;
        job.stopReason = d.reason;
        job.stopRequestedAt = o.now();
        signals.notify(job.id);
        if (d.endNow)
          await this.endRun(job, { outcome: 'cancelled', exitCode: null, signal: null, message: d.reason });
        return;
      case 'requeue':
        if (d.stopping) {
          // Stopping from now until requeued: a resource or worker whose record is being written
          // for it is not handed to it (provisioning.ts stillWants) but destroyed.
          job.stopping = d.stopping;
          job.stopReason = d.reason;
          this.provisioning.leaveWaitlist(job);
        } else signals.notify(job.id);
        return this.requeue(job, d.reason);
      case 'end-run':
        signals.notify(job.id);
        if (d.clearStopping) job.stopping = null;
        if (d.recordRuntime && job.startedAt !== null)
          this.core.runtimes.record(runtimeSubject(job), o.now() - job.startedAt);
        o.scheduler.release(job.id);
        return this.carryOut(job, d.then);
      case 'retry':
        return this.retry(job, d.failure, d.exitCode, d.charge);
      case 'finish':
        if (d.leaves === 'queue') {
          if (o.scheduler.withdraw(job.id)) this.core.jobs.inScheduler--;
          this.stopRetryTimer(job);
        } else if (d.leaves === 'admission') {
          this.provisioning.leaveWaitlist(job);
          o.scheduler.release(job.id);
        }
        return this.finish(job, d.state, d.reason, d.exitCode);
    }
  }

  /** Puts an evicted job back in its queue at its old place; what it held is destroyed. */
  private async requeue(job: TrackedJob, reason: string): Promise<void> {
    await this.endAttempt(job, { outcome: 'requeued', charged: 'none', reason, exitCode: null });
    this.core.jobs.inScheduler++;
    this.core.o.scheduler.requeue(job.id);
    this.holdings.releaseAll(job);
    // Back in its queue, it needs its privileges again, as any queued job.
    const lacking = this.gates.missing(job);
    if (lacking) await this.gates.park(job, lacking);
    this.core.wake();
  }

  /**
   * A failed job with retries left: its attempt ends, and after its backoff it goes back to its
   * queue (at its old place, as it keeps its submission time), quota released meanwhile.
   */
  private async retry(
    job: TrackedJob,
    failure: string,
    exitCode: number | null,
    kind: FailureKind,
  ): Promise<void> {
    const { o } = this.core;
    const used = job.retriesUsed;
    const n = used.job + used.infrastructure + 1;
    const delay = retryDelayMs(job.retryPolicy.backoffSeconds, n);
    // The backoff runs from the attempt's end, as its record says (endedAt).
    const endedAt = o.now();
    const retryAt = endedAt + delay;
    const which = describeRetry(job.retryPolicy, used, kind);
    const head = `attempt ${job.attempts + 1} failed: ${failure}; ${which}`;
    const reason = retryingReason(head, delay);
    await this.endAttempt(
      job,
      { outcome: 'retried', charged: kind, reason: failure, exitCode },
      { reason, retryAt, [kind === 'job' ? 'retried' : 'infraRetried']: used[kind] + 1 },
      { attempt: job.attempts + 1, exitCode, charged: kind, retryAt: new Date(retryAt).toISOString() },
      endedAt,
    );
    used[kind]++;
    job.retryAfter = head;
    job.retryAt = retryAt;
    o.metrics?.jobRetried(kind);
    this.holdings.releaseAll(job);
    await this.enqueueWhenReady(job); // sets the timer that brings it back
    this.core.wake();
  }

  /**
   * Ends the current attempt of a job that will run again: it goes back to state queued with
   * nothing held, its token revoked, and the attempt kept with where its output ends in the log.
   * `endedAt`: when it ended (now, unless the caller has timed something from it already).
   */
  private async endAttempt(
    job: TrackedJob,
    a: { outcome: 'requeued' | 'retried'; charged: AttemptCharge; reason: string; exitCode: number | null },
    extra: JobUpdate = {},
    data?: Record<string, unknown>,
    endedAt?: number,
  ): Promise<void> {
    const { jobs, journal, o } = this.core;
    const revoke = job.mayHoldToken;
    const attempt = job.attempts + 1;
    const startedAt = job.startedAt;
    const workerId = job.workerId;
    // Its run is over from now on: what its agent or factory still reports about it is refused
    // (agent-desk's jobForAgent, workerLost), and it is not requeued twice (endRun).
    jobs.dropWorker(job);
    const logEnd = await o.logs.mark(job.id);
    const now = endedAt ?? o.now();
    const allocation = allocationOf(job, a.outcome, now, workerId);
    // The next attempt is queued from now, or from the end of its backoff.
    const queuedAt = extra.retryAt ?? now;
    await journal.write(async ({ db, event }) => {
      await updateJob(db, job.id, {
        state: 'queued',
        reason: a.reason,
        admittedAt: null,
        startedAt: null,
        borrowed: null,
        attempts: attempt,
        queuedAt,
        ...extra,
      });
      if (revoke) await deleteJobTokens(db, job.id);
      await insertAttempt(db, { jobId: job.id, attempt, ...a, startedAt, endedAt: now, logEnd });
      await recordAllocation(db, allocation, job.requests);
      const message = a.outcome === 'requeued' ? a.reason : (extra.reason ?? a.reason);
      await event(job, a.outcome === 'requeued' ? 'requeued' : 'retrying', message, data ?? { attempt });
    });
    job.mayHoldToken = false;
    jobs.setState(job, 'queued');
    job.attempts = attempt;
    job.queuedAt = queuedAt;
    job.admittedAt = null;
    job.startedAt = null;
    job.borrowed = null;
    job.stopping = null;
    job.acquired = 0;
    job.createFailures = 0;
  }

  /** The job goes back to its queue at `at` (its backoff's end). */
  private retryLater(job: TrackedJob, at: number): void {
    this.stopRetryTimer(job);
    this.core.jobs.backingOff.add(job);
    job.retryTimer = setTimeout(
      () => {
        job.retryTimer = null;
        this.core.jobs.backingOff.delete(job);
        if (!this.core.jobs.unfinished(job.id) || job.ending || job.state !== 'queued') return;
        job.retryAt = null;
        this.core.background.run(
          this.enqueueWhenReady(job).then(() => this.core.wake()),
          `retry job ${job.id}`,
        );
      },
      Math.max(0, at - this.core.o.now()),
    );
    job.retryTimer.unref();
  }

  private stopRetryTimer(job: TrackedJob): void {
    if (job.retryTimer) clearTimeout(job.retryTimer);
    job.retryTimer = null;
    this.core.jobs.backingOff.delete(job);
  }

  /**
   * Records the terminal state, revokes the job's token, and starts cleanup. A job ends once: a
   * second ending (a cancel told twice, a run's end racing a cancel) waits for the first one's.
   */
  finish(job: TrackedJob, state: JobState, reason: string, exitCode: number | null): Promise<void> {
    job.ending ??= this.end(job, state, reason, exitCode);
    return job.ending;
  }

  private async end(
    job: TrackedJob,
    state: JobState,
    reason: string,
    exitCode: number | null,
  ): Promise<void> {
    const { jobs, journal, o } = this.core;
    // Nothing may be handed to it while its state is written: what it holds now is all it gets.
    this.provisioning.leaveWaitlist(job);
    this.stopRetryTimer(job);
    const endedAt = o.now();
    const update: JobUpdate = { state, reason, exitCode, finishedAt: endedAt };
    // Its last allocation, into the usage ledger with its end (one that never held quota too).
    const allocation = allocationOf(job, terminalOutcome(state), endedAt, job.workerId);
    // Holding nothing, it is cleaned up in the same transaction.
    if (job.holdings.size === 0) {
      update.cleanedUp = true;
      job.cleaning = true;
    }
    const revoke = job.mayHoldToken;
    await journal.write(async ({ db, event }) => {
      await updateJob(db, job.id, update);
      if (revoke) await deleteJobTokens(db, job.id);
      await recordAllocation(db, allocation, job.requests);
      await event(job, state, reason, exitCode === null ? undefined : { exitCode });
    });
    job.mayHoldToken = false;
    jobs.setState(job, state);
    o.metrics?.jobFinished(state);
    jobs.markFinished(job);
    o.logs.ended(job.id);
    if (job.cleaning) this.holdings.forget(job);
    else {
      this.holdings.releaseAll(job);
      // Its last holding may have gone while the state was written.
      await this.holdings.settleCleanup(job);
    }
    await this.settleDependents(job.id, state);
    const next = this.core.throttles.release(job);
    if (next) await this.toScheduler(next);
    this.core.wake();
  }

  /** A job ended: the jobs waiting for it go on to the scheduler, or are cancelled. */
  private async settleDependents(id: number, state: JobState): Promise<void> {
    for (const depId of this.core.jobs.takeDependents(id)) {
      const dependent = this.core.jobs.unfinished(depId);
      if (!dependent) continue;
      const unmet = dependent.waitingFor.find((d) => d.job === id && !dependencyMet(d.on, state));
      if (unmet) {
        await this.finish(dependent, 'cancelled', unmetReason(unmet, state), null);
        continue;
      }
      dependent.waitingFor = dependent.waitingFor.filter((d) => d.job !== id);
      if (dependent.waitingFor.length === 0) await this.enqueueWhenReady(dependent);
    }
  }
}

/**
 * The usage ledger's row for the job's current allocation (domain/usage.ts), ending at `endedAt`:
 * read before its attempt's times are reset. `final` for the job's terminal state.
 */
function allocationOf(
  job: TrackedJob,
  outcome: AllocationOutcome,
  endedAt: number,
  workerId: number | null,
): Allocation {
  return {
    jobId: job.id,
    attempt: job.attempts + 1,
    project: job.project,
    name: job.name,
    user: job.createdBy,
    queue: job.queue,
    target: job.target,
    workerId,
    workers: job.workers,
    requests: job.submittedRequests,
    queuedAt: job.queuedAt,
    admittedAt: job.admittedAt,
    startedAt: job.startedAt,
    endedAt,
    outcome,
    final: outcome !== 'requeued' && outcome !== 'retried',
  };
}

function terminalOutcome(state: JobState): AllocationOutcome {
  if (state === 'succeeded' || state === 'failed' || state === 'cancelled') return state;
  throw new Error(`a job cannot end in state ${state}`);
}
